"""What both revision stores derive from revisions before writing: partition buckets, size deltas,
the latest-pointer ordering and the content codec. Pure: no I/O."""
import zlib
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Iterable, Mapping, Sequence

from shared.revisions.model import Revision

DAY_SHARDS = 8                     # revisions_by_day partitions per (wiki, day)
ID_BLOCK = 1000                    # revision ids per revisions_by_id_block partition
CONTENT_CODEC = "zlib"
# history() bounds when the caller gives none
EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9999, 12, 31, tzinfo=timezone.utc)


def utc(ts: datetime) -> datetime:
    """Aware UTC; naive values (as the Cassandra driver returns them) are taken as UTC."""
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)


def month_of(ts: datetime) -> int:
    ts = utc(ts)
    return ts.year * 100 + ts.month


def day_of(ts: datetime) -> date:
    return utc(ts).date()


def day_shard(rev_id: int) -> int:
    return rev_id % DAY_SHARDS


def id_block(rev_id: int) -> int:
    """The revisions_by_id_block partition of a revision id: ids in consecutive blocks of ID_BLOCK."""
    return rev_id // ID_BLOCK


def one_page(revisions: Sequence[Revision]) -> tuple[str, int]:
    """(wiki, page_id) shared by every revision; a write covers exactly one page."""
    keys = {(r.wiki, r.page_id) for r in revisions}
    if len(keys) != 1:
        raise ValueError(f"revisions: one write must hold revisions of one page, got {sorted(keys)}")
    return keys.pop()


@dataclass(frozen=True)
class PageRows:
    """The revisions of one page that one write stores."""
    wiki: str
    page_id: int
    revisions: tuple[Revision, ...]


def page_rows(pages: Iterable[Sequence[Revision]]) -> list[PageRows]:
    """The pages of a multi-page write, in order of first appearance. Each sequence holds one page's
    revisions (ValueError otherwise, as for a single write); a page given twice (a long history in
    several parts) is written once with all its revisions, a repeated rev_id once; empty ones are dropped."""
    merged: dict[tuple[str, int], dict[int, Revision]] = {}
    for revisions in pages:
        if revisions:
            merged.setdefault(one_page(revisions), {}).update((r.rev_id, r) for r in revisions)
    return [PageRows(wiki, page_id, tuple(revs.values())) for (wiki, page_id), revs in merged.items()]


def described(pages: Sequence[PageRows]) -> str:
    """What a failed write held, for its error message."""
    revisions = sum(len(p.revisions) for p in pages)
    if len(pages) == 1:
        return f"{revisions} revisions of {pages[0].wiki} page {pages[0].page_id}"
    return f"{revisions} revisions of {len(pages)} pages"


def newest(revisions: Iterable[Revision]) -> Revision:
    return max(revisions, key=lambda r: (utc(r.timestamp), r.rev_id))


def pointer_timestamp_us(revision: Revision) -> int:
    """Write timestamp of a page's latest-revision pointer: the revision's second in µs, with the
    rev_id breaking ties inside that second, so last-write-wins keeps the newest revision."""
    return int(utc(revision.timestamp).timestamp()) * 1_000_000 + revision.rev_id % 1_000_000


def first_month_timestamp(month: int) -> int:
    """Write timestamp of a page's first_month: larger for earlier months, so last-write-wins keeps
    the smallest month any writer saw, whatever the order of arrival."""
    return 1_000_000 - month


def missing_parents(revisions: Sequence[Revision]) -> set[int]:
    """Parent ids whose size must be looked up in storage (not in this write, not a page creation)."""
    present = {r.rev_id for r in revisions}
    return {r.parent_id for r in revisions if r.parent_id and r.parent_id not in present}


def size_deltas(revisions: Sequence[Revision], stored_sizes: Mapping[int, int]) -> dict[int, int | None]:
    """rev_id -> size minus the parent's size; a page creation's delta is its size; None when the
    parent is neither in this write nor in `stored_sizes`."""
    sizes = {**stored_sizes, **{r.rev_id: r.size for r in revisions}}
    deltas: dict[int, int | None] = {}
    for r in revisions:
        if not r.parent_id:
            deltas[r.rev_id] = r.size
        else:
            parent = sizes.get(r.parent_id)
            deltas[r.rev_id] = None if parent is None else r.size - parent
    return deltas


def compress_text(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), 6)


def decompress_text(codec: str, body: bytes) -> str:
    if codec != CONTENT_CODEC:
        raise ValueError(f"codec: unknown content codec {codec!r}")
    return zlib.decompress(body).decode("utf-8")
