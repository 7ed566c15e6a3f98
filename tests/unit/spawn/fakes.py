"""Test doubles for spawn unit tests: a clock, an in-memory RevisionStore, a scripted wiki."""
import threading
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from shared.revisions.model import PageState, ResumePoint, Revision
from spawn.mediawiki import Opening, PageDeleted, PageInfo, TitleMissing


class FakeClock:
    def __init__(self, start: float = 1000.0):
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


class MemoryStore:
    """The RevisionStore protocol over a dict, for unit tests only."""

    def __init__(self):
        self.rows: dict[tuple[str, int], Revision] = {}
        self.writes = 0
        self.resume_override: ResumePoint | None = None    # as after a crash in the middle of a batch
        self.history_reads = 0
        self.deleted: set[tuple[str, int]] = set()       # pages marked deleted
        self._lock = threading.Lock()

    def write(self, revisions):
        with self._lock:
            self.writes += 1
            for r in revisions:           # an upsert by natural key, like the real stores
                self.rows[(r.wiki, r.rev_id)] = r

    def _page(self, wiki, page_id):
        return sorted((r for r in self.rows.values() if r.wiki == wiki and r.page_id == page_id),
                      key=lambda r: (r.timestamp, r.rev_id), reverse=True)

    def resume_point(self, wiki, page_id):
        if self.resume_override is not None:
            return self.resume_override
        revs = self._page(wiki, page_id)
        return ResumePoint(revs[0].rev_id, revs[0].timestamp) if revs else None

    def page(self, wiki, page_id):
        """Its resume point and the count up to it, written together as the real stores do."""
        resume = self.resume_point(wiki, page_id)
        if resume is None:
            return None
        stored = [r for r in self._page(wiki, page_id) if (r.timestamp, r.rev_id) <= (resume.timestamp, resume.rev_id)]
        return PageState(wiki, page_id, stored[0].title, resume.rev_id, resume.timestamp, len(stored),
                         (wiki, page_id) in self.deleted)

    def mark_deleted(self, wiki, page_id):
        with self._lock:
            keys = [k for k, r in self.rows.items() if r.wiki == wiki and r.page_id == page_id]
            for k in keys:
                self.rows[k] = replace(self.rows[k], content=None)
            if keys:
                self.deleted.add((wiki, page_id))
            return bool(keys)

    def hide_revision_fields(self, wiki, rev_id, *, text=False, comment=False, user=False):
        with self._lock:
            r = self.rows.get((wiki, rev_id))
            if r is None:
                return False
            if text:
                r = replace(r, content=None, text_hidden=True, sha1=None, sha1_hidden=True)
            if comment:
                r = replace(r, comment=None, comment_hidden=True)
            if user:
                r = replace(r, user=None, user_id=None, user_hidden=True)
            self.rows[(wiki, rev_id)] = r
            return True

    def mark_restored(self, wiki, page_id):
        self.deleted.discard((wiki, page_id))

    def history(self, wiki, page_id, *, since=None, until=None):
        self.history_reads += 1
        return iter([r for r in self._page(wiki, page_id)
                     if (until is None or r.timestamp <= until) and (since is None or r.timestamp >= since)])

    def stored_ids(self, wiki, page_ids, until):
        return {p: [r.rev_id for r in self.history(wiki, p, until=until)] for p in page_ids}

    def page_id(self, wiki, title):
        revs = [r for r in self.rows.values() if r.wiki == wiki]
        newest = {}
        for r in sorted(revs, key=lambda r: (r.timestamp, r.rev_id)):
            newest[r.page_id] = r
        return next((pid for pid, r in newest.items() if r.title == title), None)

    def content(self, wiki, rev_id):
        row = self.rows.get((wiki, rev_id))
        return None if row is None else row.content

    def revisions(self, wiki=None):
        return [r for r in self.rows.values() if wiki is None or r.wiki == wiki]

    def close(self):
        pass


T0 = datetime(2020, 1, 1, tzinfo=timezone.utc)


def make_revisions(n: int, *, wiki="wiki.test", page_id=7, title="Page", start_id=100, every=timedelta(hours=1)):
    return [Revision(wiki=wiki, page_id=page_id, ns=0, title=title, rev_id=start_id + i,
                     parent_id=start_id + i - 1 if i else 0, timestamp=T0 + i * every, user=f"U{i % 5}",
                     user_id=i % 5 + 1, anon=False, minor=False, size=100 + i, sha1="0" * 40, comment=f"c{i}")
            for i in range(n)]


class FakeWiki:
    """Stands in for MediaWikiClient in DataSource tests: serves `history` oldest-first in batches."""

    def __init__(self, history, *, batch=10, page=PageInfo(7, 0, "Page", 0), host="wiki.test"):
        self.history = list(history)
        self.batch = batch
        self.page = page
        self.host = host
        self.calls: list[tuple] = []
        self.fail: Exception | None = None         # raised by revisions_of_pages
        self.deleted = False                # the page id answers as missing, and so does its title
        self.missing_titles: set[str] = set()   # titles naming no page (e.g. moved away without a redirect)

    def move(self, title: str, rev_id: int) -> None:
        """A move: the page keeps its id, gets a null revision, and every revision is served under the new title."""
        last = self.history[-1]
        null = replace(last, rev_id=rev_id, parent_id=last.rev_id, timestamp=last.timestamp + timedelta(minutes=1),
                       comment="moved")
        self.history = [replace(r, title=title) for r in [*self.history, null]]
        self.page = replace(self.page, title=title, last_rev_id=rev_id)

    def _title(self, title):
        if self.deleted or title in self.missing_titles:
            raise TitleMissing(f"page {title!r} does not exist")

    def resolve(self, title, **kw):
        self.calls.append(("resolve", title))
        self._title(title)
        return self.page

    def page_by_id(self, page_id, **kw):
        self.calls.append(("page_by_id", page_id))
        return None if self.deleted or page_id != self.page.page_id else self.page

    def open_history(self, title, *, page_id=None, start=None, content=False, **kw):
        """The title's resolution and first batch in one call, as MediaWikiClient.open_history."""
        self.calls.append(("open", start, content, title))
        self._title(title)
        if page_id is not None and page_id != self.page.page_id:
            return Opening(self.page, start, content, None, None)
        revs = self._history(start, content)
        more = {"offset": self.batch} if len(revs) > self.batch else None
        return Opening(self.page, start, content, revs[:self.batch], more)

    def continue_history(self, opening, **kw):
        yield opening.batch
        if opening.more is not None:
            yield from self.revision_batches(opening.page, start=opening.start, content=opening.content,
                                             cont=opening.more)

    def revision_batches(self, page, *, start=None, content=False, cont=None, **kw):
        self.calls.append(("revisions", start, content))
        if self.deleted:
            raise PageDeleted(page.page_id)
        revs = self._history(start, content)
        for i in range((cont or {}).get("offset", 0), max(len(revs), 1), self.batch):
            yield revs[i:i + self.batch]

    def revisions_by_id(self, page, rev_ids, *, content=False, **kw):
        wanted = set(rev_ids)
        self.calls.append(("by_id", tuple(sorted(wanted)), content))
        return [r for r in self._history(None, content) if r.rev_id in wanted]

    def revisions_of_pages(self, page_ids, rev_ids, *, content=False, **kw):
        wanted = set(rev_ids)
        self.calls.append(("of_pages", tuple(sorted(wanted)), content))
        if self.fail:
            raise self.fail
        found = [r for r in self._history(None, content) if r.rev_id in wanted and r.page_id in set(page_ids)]
        return {pid: [r for r in found if r.page_id == pid] for pid in {r.page_id for r in found}}

    def _history(self, start, content):
        return [replace(r, content=f"text of {r.rev_id}") if content else r
                for r in self.history if start is None or r.timestamp >= start]


class FakeBatcher:
    def __init__(self):
        self.scheduled: dict[str, tuple] = {}

    def schedule(self, key, page_id, last_rev_id, delay_s, interval_s, wake, tenants=()):
        self.scheduled[key] = (page_id, last_rev_id, delay_s, interval_s)

    def cancel(self, key):
        self.scheduled.pop(key, None)
