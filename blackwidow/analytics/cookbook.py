"""The analysts' cookbook as code: the named CQL statements of docs/analysts.md, prepared once, and the
client-side steps CQL cannot do (month walks, the day's shard fan-out, grouping by a non-key column).

docs/analysts.md is the one place each statement is written; the Python steps it shows are copied from
this module and a test keeps the two equal. Needs a driver session whose keyspace is set
(cluster.connect(keyspace)); this module never imports the driver.
"""
import heapq
import re
from collections import Counter
from datetime import date, datetime, timezone
from pathlib import Path

from shared.revisions.derived import DAY_SHARDS, id_block, month_of
from shared.revisions.text_history import DICTIONARY_BLOB, decode

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "analysts.md"
_STATEMENT = re.compile(r"^```cql\n-- name: (\w+)\n(.*?)^```", re.M | re.S)


def load_statements(path: Path = DOC_PATH) -> dict[str, str]:
    """name -> CQL of every ```cql block whose first line is `-- name: <name>`."""
    statements: dict[str, str] = {}
    for name, body in _STATEMENT.findall(Path(path).read_text(encoding="utf-8")):
        if name in statements:
            raise ValueError(f"cookbook: statement {name!r} is defined twice in {path}")
        statements[name] = body.strip().rstrip(";").strip()
    return statements


# -- client-side steps (shown in docs/analysts.md) -------------------------------------------------

def months_overlapping(months, since, until):
    """The page's months (from page_months) that [since, until) touches, newest first."""
    first, last = month_of(since), month_of(until)
    return sorted((m for m in months if first <= m <= last), reverse=True)


def merge_shards(shards):
    """One newest-first list from the day's shards, each already newest first."""
    return list(heapq.merge(*shards, key=lambda r: (r.rev_ts, r.rev_id), reverse=True))


def top_editors(rows, n=10):
    """(user, edits) for the n most active editors; ties in name order."""
    counts = Counter(row.user_text for row in rows if row.user_text is not None)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


def largest_changes(rows, n=10):
    """The n revisions with the largest absolute size change, largest first."""
    known = [row for row in rows if row.size_delta is not None]
    return sorted(known, key=lambda row: (-abs(row.size_delta), row.rev_ts))[:n]


def anon_share(rows):
    """Anonymous and registered edit counts, and the anonymous fraction."""
    anonymous = sum(1 for row in rows if row.anon)
    return {"anonymous": anonymous, "registered": len(rows) - anonymous,
            "anonymous_share": anonymous / len(rows) if rows else 0.0}


def year_months(year):
    """The twelve month partitions of a year, newest first."""
    return [year * 100 + m for m in range(12, 0, -1)]


# -- the recipes ---------------------------------------------------------------------------------

class Cookbook:
    """Each method runs one recipe of docs/analysts.md with prepared statements and returns driver rows
    (named tuples; timestamps come back naive UTC) or the small aggregate the recipe describes."""

    def __init__(self, session, path: Path = DOC_PATH):
        self._session = session
        self._ps = {name: session.prepare(cql) for name, cql in load_statements(path).items()}

    @property
    def statement_names(self) -> list[str]:
        return sorted(self._ps)

    def run(self, name: str, **params) -> list:
        return list(self._session.execute(self._ps[name], params))

    def page_id(self, wiki: str, title: str) -> int | None:
        rows = self.run("page_by_title", wiki=wiki, title=title)
        return rows[0].page_id if rows else None

    def months(self, wiki: str, page_id: int) -> list[int]:
        return [row.month for row in self.run("page_months", wiki=wiki, page_id=page_id)]

    def full_history(self, wiki: str, page_id: int) -> list:
        return [row for month in self.months(wiki, page_id)
                for row in self.run("history_month", wiki=wiki, page_id=page_id, month=month)]

    def history_between(self, wiki: str, page_id: int, since: datetime, until: datetime) -> list:
        months = months_overlapping(self.months(wiki, page_id), since, until)
        return [row for month in months
                for row in self.run("history_between", wiki=wiki, page_id=page_id, month=month,
                                    since=since, until=until)]

    def edits_per_day(self, wiki: str, page_id: int) -> list[tuple[date, int, int | None]]:
        """(day, edits, net bytes) newest first; the grouping runs in Cassandra, one partition a month."""
        return [(_day(row.day), row.edits, row.net_bytes) for month in self.months(wiki, page_id)
                for row in self.run("edits_per_day", wiki=wiki, page_id=page_id, month=month)]

    def month_summary(self, wiki: str, page_id: int, month: int):
        return self.run("month_summary", wiki=wiki, page_id=page_id, month=month)[0]

    def top_editors(self, wiki: str, page_id: int, year: int, n: int = 10) -> list[tuple[str, int]]:
        months = [m for m in self.months(wiki, page_id) if m // 100 == year]
        return top_editors([row for month in months
                            for row in self.run("editors_month", wiki=wiki, page_id=page_id, month=month)], n)

    def user_month(self, wiki: str, user: str, month: int) -> list:
        return self.run("user_month", wiki=wiki, user=user, month=month)

    def day_edits(self, wiki: str, day: date) -> list:
        return merge_shards([self.run("day_shard", wiki=wiki, day=day, shard=shard)
                             for shard in range(DAY_SHARDS)])

    def day_count(self, wiki: str, day: date) -> int:
        return self.run("day_count", wiki=wiki, day=day, shards=list(range(DAY_SHARDS)))[0].edits

    def latest_revisions(self, wiki: str, page_ids: list[int]) -> list:
        return self.run("latest_revisions", wiki=wiki, page_ids=list(page_ids))

    def largest_changes(self, wiki: str, page_id: int, n: int = 10) -> list:
        return largest_changes(self.full_history(wiki, page_id), n)

    def largest_changes_on_day(self, wiki: str, day: date, n: int = 10) -> list:
        return largest_changes(self.day_edits(wiki, day), n)

    def anon_share(self, wiki: str, page_id: int) -> dict:
        return anon_share([row for month in self.months(wiki, page_id)
                           for row in self.run("editors_month", wiki=wiki, page_id=page_id, month=month)])

    def tagged(self, wiki: str, tag: str, months: list[int]) -> list:
        return [row for month in sorted(months, reverse=True)
                for row in self.run("tag_month", wiki=wiki, tag=tag, month=month)]

    def revision(self, wiki: str, rev_id: int):
        rows = self.run("revision_by_id", wiki=wiki, id_block=id_block(rev_id), rev_id=rev_id)
        return rows[0] if rows else None

    def revision_text(self, wiki: str, rev_id: int) -> str | None:
        """Recipe 13: the revision's text row, then its group's dictionary and blob (two partitions read)."""
        rows = self.run("revision_text", wiki=wiki, rev_id=rev_id)
        if not rows:
            return None
        where = rows[0]
        blobs = {row.blob: row for row in self.run("text_blobs", wiki=wiki, page_id=where.page_id, grp=where.grp,
                                                   blob=where.blob)}
        return decode(blobs[DICTIONARY_BLOB].body, blobs[where.blob].body)


def _day(value) -> date:
    """floor(rev_ts, 1d) comes back as a naive UTC midnight."""
    return value.replace(tzinfo=timezone.utc).date() if isinstance(value, datetime) else value
