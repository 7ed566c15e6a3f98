"""count, avg and mode over the revisions a Filters selects, read through any RevisionStore.

A title or page id narrows the read to that page's history (its own partitions on Cassandra, an
index range on SQLite), bounded by the date filters; anything else reads every stored revision of
the wiki and filters here. Both stores therefore give the same answers from the same rows.
"""
from collections import Counter
from datetime import date, timezone
from typing import Iterable, Iterator

from blackwidow.stats.filters import Filters
from shared.errors import ValidationError
from shared.revisions.model import Revision
from shared.revisions.store import RevisionStore

_FIELDS = {
    "title": lambda r: r.title,
    "pageid": lambda r: r.page_id,
    "user": lambda r: r.user,
    "userid": lambda r: r.user_id,
    "date": lambda r: _day(r).isoformat(),
    "size": lambda r: r.size,
}
MODE_FIELDS = tuple(_FIELDS)


def selected_pages(store: RevisionStore, filters: Filters, wiki: str | None) -> list[tuple[str, int]]:
    """(wiki, page_id) of the page a title or pageid filter names, in each wiki considered."""
    found = []
    for w in [wiki] if wiki else store.wikis():
        page_id = filters.pageid
        if filters.title is not None:
            by_title = store.page_id(w, filters.title)
            if by_title is None or (page_id is not None and page_id != by_title):
                continue
            page_id = by_title
        if page_id is not None:             # else neither filter names a page
            found.append((w, page_id))
    return found


def matching(store: RevisionStore, filters: Filters, wiki: str | None = None) -> Iterator[Revision]:
    if filters.title is None and filters.pageid is None:
        for w in [wiki] if wiki else store.wikis():
            yield from (r for r in store.revisions(w) if filters.matches(r))
        return
    since, until = filters.time_bounds()
    for w, page_id in selected_pages(store, filters, wiki):
        yield from (r for r in store.history(w, page_id, since=since, until=until) if filters.matches(r))


def count(revisions: Iterable[Revision]) -> dict:
    return {"count": sum(1 for _ in revisions)}


def average_per_day(revisions: Iterable[Revision], filters: Filters) -> dict:
    """Revisions per day over the filters' date range, or (when open) from the first to the last
    matching revision's day; both ends count as whole days."""
    days = [_day(r) for r in revisions]
    first = filters.first_day or (min(days) if days else None)
    last = filters.last_day or (max(days) if days else None)
    span = (last - first).days + 1 if first and last else 0
    return {"revisions": len(days), "days": span,
            "first_day": first.isoformat() if first else None, "last_day": last.isoformat() if last else None,
            "avg_per_day": len(days) / span if span > 0 else 0.0}


def check_mode_field(field: str) -> None:
    if field not in MODE_FIELDS:
        raise ValidationError(f"unknown mode field {field!r}; allowed fields: {', '.join(MODE_FIELDS)}",
                              "field")


def mode(revisions: Iterable[Revision], field: str) -> dict:
    """The most frequent value(s) of `field`; every value that ties for first, sorted."""
    check_mode_field(field)
    counts: Counter = Counter()
    total = 0
    for r in revisions:
        total += 1
        value = _FIELDS[field](r)
        if value is not None:
            counts[value] += 1
    top = max(counts.values(), default=0)
    return {"field": field, "values": sorted(v for v, n in counts.items() if n == top) if top else [],
            "count": top, "revisions": total}


def _day(r: Revision) -> date:
    return r.timestamp.astimezone(timezone.utc).date()
