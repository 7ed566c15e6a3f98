"""DataSource: the one fetcher of a (wiki, page), shared by its subscribers.

Its thread resolves the title in its first history request, resumes from the newest stored
revision (its count and newest revisions read from the store, never the page's whole history:
spawn.stored_log), fetches oldest-first batches, writes each batch once, then delivers it to every attached
subscriber. When the history is complete it waits for the revisit batcher (or a new subscriber) to
wake it. Errors never end the thread: they are reported on the subscribers and retried with
backoff. stop() ends it without another write.

The page is its page id (spawn.page_fate): a move is followed (the new title is announced to the registry,
which keys the page by it), a deletion shows `deleted` and leaves one check for undeletion per longest
revisit interval, and an undeletion reads the history again from its start, since the revisions it
restores are older than the resume point.

Once caught up, and again at most once per longest revisit interval, the stored history is compared with the
wiki's by revision id (spawn.completeness): what is missing is written, and the subscribers report whether
the stored history was proven equal to the wiki's (`complete`).
"""
import logging
import queue
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable, Iterator

from shared.feed_wire import CHECK, HIDE, HISTORY, REVISIONS, VISIBILITY, Hides, joined
from shared.revisions.model import PageState, ResumePoint, Revision
from shared.revisions.store import RevisionStore, StoreError
from spawn import completeness, page_fate, revisit
from spawn.host_limiter import Backoff
from spawn.mediawiki import (AddressRefused, Cancelled, MediaWikiClient, MediaWikiError, Opening, PageDeleted,
                             PageInfo, PageUnavailable, TitleMissing)
from spawn.metrics import SpawnMetrics
from spawn.page_fate import Fate
from spawn.nudge_fetch import RevisionFetcher, chain
from spawn.revisit import RevisitBatcher
from spawn.stored_log import RECENT_MAX, StoredLog
from spawn.subscriber import Subscriber
from spawn.upstream_budget import BACKFILL, FRESH, Demand

logger = logging.getLogger(__name__)

# How far before the newest stored revision a starting source reads the newest revisions for the revisit
# rate (spawn.revisit): at least a month, and 20 (the rule's smallest window) longest revisit intervals. A
# page edited faster than that interval has its window's newest revisions inside the span; a slower one is
# revisited at the longest interval whatever its window says.
RECENT_SPAN_MIN = timedelta(days=31)


class DataSource:
    def __init__(self, key: str, title: str, *, client: MediaWikiClient, store: RevisionStore,
                 batcher: RevisitBatcher, revisit_min_s: float, revisit_max_s: float,
                 on_limit: Callable[[Subscriber], None], metrics: SpawnMetrics | None = None,
                 backoff: Backoff | None = None, now=time.time, followed: Callable[[], bool] = lambda: False,
                 fetcher: RevisionFetcher | None = None):
        self.key = key
        self.title = title
        self.client = client
        self.store = store
        self.batcher = batcher
        self.fetcher = fetcher              # revisions the feed announced, fetched with other pages'
        self.revisit_min_s = revisit_min_s
        self.revisit_max_s = revisit_max_s
        self._on_limit = on_limit           # called (without locks held) for a subscriber that hit its quota
        self.metrics = metrics or SpawnMetrics()
        self.backoff = backoff or Backoff(base_s=2.0, cap_s=300.0)
        self._now = now
        self._subs: dict[str, Subscriber] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.page: PageInfo | None = None
        # the registry's hook, called (without locks held) once the title is resolved: it may stop
        # this source and hand its subscribers to one already fetching the same page
        self.on_resolved: Callable[["DataSource"], None] | None = None
        self._opening: Opening | None = None   # the first history batch, read with the title's resolution
        self._opened: PageState | None = None  # the stored page row that batch starts from
        self._log: StoredLog | None = None  # the page's stored revisions up to the resume point
        self._unnamed: list[Subscriber] = []   # credited below the held ids: to credit again once read
        self.written = 0                    # revisions this process wrote for this source
        self.complete = False
        self.had_history = False            # once complete: its requests are in the freshness lane
        self.deleted = False                # the wiki answers the page as missing: only rare re-checks
        self._deleted_reason = ""
        self._marked_deleted = False        # the store removed its texts and marked its row deleted
        self._reread_due = False            # undeleted: read the whole history again before resuming
        self.proven: bool | None = None     # the stored history equals the wiki's (None: not checked yet)
        self._caught_up_at: float | None = None     # when the harvest last reached the wiki's newest revision
        self._checked_at: float | None = None       # when the history was last compared with the wiki's
        # the change feed (shared.feed_wire): whether its wiki's feed is followed (revisits then only as a
        # safety net), nudges received and the last one a finished pass covered, and what they asked for
        self._followed = followed
        self._nudged = 0
        self._done = 0
        self._pass_gen = 0
        self._verify_now = False        # compare the history with the wiki's at the next pass, due or not
        self._revisit_soon = False      # the feed cannot vouch for a span: ask the revisit batcher soon
        self._pass_wanted = False       # a nudge that needs a pass of its own
        self._recheck_revs: set[int] = set()    # revisions whose visibility changed on the wiki: read them again
        self._hide_now: Hides = ()      # fields the feed says were hidden: gone before any request
        self._hide_pass = False         # a nudge that only hides fields: a caught-up page asks the wiki nothing
        self._announced: list[Revision] = []    # fetched by the RevisionFetcher: the next harvest's first batch

    # -- subscribers (called by the registry under its lock) -------------------------------
    def attach(self, sub: Subscriber) -> None:
        with self._lock:
            self._subs[sub.id] = sub
            log = self._log
            loaded = log is not None
            if log is not None:
                sub.credit(log)
                if log.wants_older:
                    self._unnamed.append(sub)       # its last revision is named by this source's thread
        if loaded and sub.at_limit():
            self._release(sub)
        if self.deleted:
            sub.set_state("deleted", self._deleted_reason)
        self._wake.set()    # a newcomer may want content or more revisions than the others

    def detach(self, sub_id: str) -> int:
        """Remove a subscriber; returns how many remain."""
        with self._lock:
            self._subs.pop(sub_id, None)
            return len(self._subs)

    def subscribers(self) -> list[Subscriber]:
        with self._lock:
            return list(self._subs.values())

    def _release(self, sub: Subscriber) -> None:
        self.detach(sub.id)
        self._on_limit(sub)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"source-{self.title[:40]}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.batcher.cancel(self.key)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        self._wake.set()

    def nudge(self, kind: str, rev_ids: Iterable[int] = (), hide: Hides = ()) -> None:
        """The change feed says the page changed: read on (REVISIONS), also read `rev_ids` again for fields
        hidden or shown (VISIBILITY), also compare the whole history now (HISTORY), or let the revisit batcher
        check it soon (CHECK, batched 50 pages a request). `hide`: fields revision deletion hid, removed from
        the store at the start of the next pass, before it waits for any request; HIDE asks nothing more."""
        rev_ids = tuple(rev_ids)
        with self._lock:
            self._nudged += 1
            self._hide_now = joined(self._hide_now, hide)
            if kind == HIDE:
                self._hide_pass = True
            elif kind == CHECK:
                self._revisit_soon = True
            else:
                self._pass_wanted = True
                self._verify_now = self._verify_now or kind == HISTORY
                if kind == VISIBILITY:
                    self._recheck_revs.update(rev_ids)
            page = self.page
            # a caught-up page's new revisions come with other pages' in one request (spawn.nudge_fetch)
            fetch = kind == REVISIONS and rev_ids and self.fetcher is not None and page is not None and \
                self.complete and not self.deleted and self._log is not None
        if fetch:
            assert self.fetcher is not None and page is not None
            self.fetcher.fetch(self.key, page, rev_ids, content=self._need()[1], tenants=self._tenants(),
                               deliver=self._fetched)
        else:
            self._wake.set()

    def _fetched(self, revisions: list[Revision] | None) -> None:
        """The RevisionFetcher's answer to a nudge: the next pass starts from them when they follow on."""
        with self._lock:
            self._announced.extend(revisions or ())
        self._wake.set()

    @property
    def settled(self) -> bool:
        """Caught up (or known deleted) by a pass that began after the last nudge: the feed's watermark
        holds for this page."""
        with self._lock:
            return self._done == self._nudged and (self.complete or self.deleted)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def resolved(self) -> PageInfo:
        """The page; every step past _prepare runs once the title is resolved."""
        if self.page is None:
            raise RuntimeError(f"{self.title!r} is not resolved yet")
        return self.page

    # -- the loop --------------------------------------------------------------------------
    def _run(self) -> None:
        failures = 0
        check_only = False      # woken by the history check's timer, not by the revisit batcher or a subscriber
        while not self._stop.is_set():
            try:
                due, check_only = check_only, False
                self.run_once(check_only=due)
                failures = 0
                check_only = not self._wake.wait(self._until_check())
            except Cancelled:
                return
            except PageDeleted as exc:
                self._on_deleted(exc)
                self._pass_done()
                # the rare re-check for an undeletion, or sooner when the change feed names the page
                self._wake.wait(self.revisit_max_s)
                if self._stop.is_set():
                    return
            except (PageUnavailable, AddressRefused) as exc:
                # the wiki's own message, or an address never to connect to; retried only after the
                # longest revisit interval
                self._report("failed", str(exc))
                self.metrics.source_errors.labels(kind="unavailable" if isinstance(exc, PageUnavailable)
                                                  else "refused").inc()
                if self._stop.wait(self.revisit_max_s):
                    return
            except Exception as exc:        # one bad page never kills the thread
                if not isinstance(exc, (MediaWikiError, StoreError)):
                    logger.exception("source.error", extra={"title": self.title})
                self.metrics.source_errors.labels(kind=type(exc).__name__).inc()
                self._report("waiting", f"{type(exc).__name__}: {exc}")
                delay = self.backoff.delay(failures)
                failures += 1
                if self._stop.wait(delay):
                    return

    def run_once(self, check_only: bool = False) -> None:
        """One pass: resolve, catch up from the resume point, compare the history with the wiki's when due,
        schedule the revisit. `check_only`: the comparison's timer woke it; the revisit batcher asks for new
        revisions, so no history request is sent for them. Raises on errors."""
        self._pass(check_only)
        self._pass_done()

    def _pass(self, check_only: bool) -> None:
        self._wake.clear()
        with self._lock:
            self._pass_gen = self._nudged
            soon, self._revisit_soon = self._revisit_soon, False
            wanted, self._pass_wanted = self._pass_wanted, False
            hides_only, self._hide_pass = self._hide_pass, False
        self._hide_announced()
        if (soon or hides_only) and not wanted and self.complete and not self.deleted and not check_only:
            if soon:
                self._schedule_revisit(soon=True)
            return
        if self.deleted:
            self._recheck()
        if not self._prepare():
            return
        if self._reread_due:
            self._reread()
        if check_only and not self.deleted:
            self._verify()
            return
        self._backfill_content()
        self._harvest()
        self._recheck_visibility()
        self._verify()
        self._schedule_revisit()

    def _pass_done(self) -> None:
        with self._lock:
            self._done = self._pass_gen

    def _prepare(self) -> bool:
        """False while the title is unresolved and nobody may take a revision (e.g. no lease yet):
        the first history request then waits for a wake-up, so it can resolve and read at once."""
        if self.page is None:
            self._open()
            if self.page is None:
                return False
        if self._log is None:
            opened, self._opened = self._opened, None     # the page row _open read, if it is this page's
            if opened is None or opened.page_id != self.page.page_id:
                opened = self.store.page(self.client.host, self.page.page_id)
            self._load(opened)
        if self._log is not None and self._log.wants_older:
            self._credit(self._log)
        if not self.deleted:
            self._report("running")
        return True

    def _open(self) -> None:
        """Resolve the title with the first history request, from where the page this title held
        last time resumes: a restart or a move to another node reads no stored batch again."""
        need, content = self._need()
        if need == 0:
            return
        known = self.store.page_id(self.client.host, self.title)
        self._opened = None if known is None else self.store.page(self.client.host, known)
        start = self._opened.latest_timestamp if self._opened is not None else None
        try:
            self._opening = self.client.open_history(self.title, page_id=known, content=content, start=start,
                                                     **self._kw())
        except TitleMissing:
            by_id = None if known is None else self.client.page_by_id(known, **self._kw())
            fate = page_fate.missing_title(known, by_id)
            if fate is Fate.UNKNOWN:
                raise
            assert known is not None
            if by_id is None:
                self.page = self._stored_page(known)
                raise PageDeleted(known) from None
            # moved away without a redirect: the page id the title had goes on under its new title
            self._opening = self.client.open_history(by_id.title, page_id=known, content=content, start=start,
                                                     **self._kw())
        self.page = self._opening.page
        # undeleted while no source watched it: its restored revisions may be older than the resume point
        self._reread_due = page_fate.undeleted_unseen(self._opened, self.page.page_id)
        logger.info("source.resolved", extra={"title": self.title, "page_id": self.page.page_id,
                                              "wiki": self.client.host})
        self._announce()

    def _announce(self) -> None:
        """Tell the registry which page this source fetches (resolved, or under a new title after a move)."""
        if self.on_resolved is not None:
            self.on_resolved(self)
            if self._stop.is_set():
                raise Cancelled("merged into the source of the same page")

    def _stored_page(self, page_id: int) -> PageInfo:
        """The page as stored (its newest revision): what a source knows of a page deleted before it started."""
        newest = next(iter(self.store.history(self.client.host, page_id)), None)
        if newest is None:
            return PageInfo(page_id, 0, self.title, 0)
        return PageInfo(page_id, newest.ns, newest.title, newest.rev_id)

    def _on_deleted(self, exc: PageDeleted) -> None:
        if not self.deleted:
            logger.info("source.deleted", extra={"title": self.title, "page_id": exc.page_id,
                                                 "wiki": self.client.host})
        self.deleted, self._deleted_reason = True, str(exc)
        self.complete, self.proven = False, None
        self._caught_up_at = self._checked_at = None
        self.batcher.cancel(self.key)
        if self._log is None and self.page is not None:
            self._load(self.store.page(self.client.host, self.page.page_id))   # what is stored still counts
        if not self._marked_deleted:
            try:
                self.store.mark_deleted(self.client.host, exc.page_id)
                self._marked_deleted = True
            except StoreError as err:       # marked at the next re-check
                logger.warning("source.mark_deleted_failed", extra={"page_id": exc.page_id, "error": str(err)})
        self.metrics.source_errors.labels(kind="deleted").inc()
        self._report("deleted", str(exc))

    def _recheck(self) -> None:
        """A deleted page's re-check. Raises PageDeleted while neither its id nor its title names a page. Back
        under its id: its history is read again; a new page at the subscribed title: that page is followed."""
        page = self.resolved
        found = self.client.page_by_id(page.page_id, **self._kw())
        if found is not None:
            self.page = found
            self._reread_due = True
        else:
            try:
                self.client.resolve(self.title, **self._kw())
            except TitleMissing:
                raise PageDeleted(page.page_id) from None
            self.page, self._log = None, None     # resolved again from the title by _prepare
        logger.info("source.undeleted", extra={"title": self.title, "page_id": page.page_id,
                                               "same_id": found is not None, "wiki": self.client.host})
        self.deleted, self._marked_deleted = False, False
        if found is not None and (found.ns, found.title) != (page.ns, page.title):
            self._announce()

    def _reread(self) -> None:
        """After an undeletion: the stored range of the history is fetched again and rewritten, so revisions
        restored with timestamps before the resume point are stored too; the subscribers are credited again."""
        host, page_id = self.client.host, self.resolved.page_id
        state = self.store.page(host, page_id)
        if state is not None:
            logger.info("source.reread", extra={"title": self.title, "until_rev_id": state.latest_rev_id})
            self._rewrite((state.latest_timestamp, state.latest_rev_id), self._need()[1])
            self.store.mark_restored(host, page_id)
            self._load(self.store.page(host, page_id))
        self._reread_due = False

    def _history_until(self, last: tuple[datetime, int], content: bool = False) -> Iterator[list[Revision]]:
        """The page's history from its start, batch by batch, up to `last` (timestamp, rev id)."""
        batches = self.client.revision_batches(self.resolved, content=content, **self._kw())
        for batch in prefetched(batches, self._stop):
            old = page_fate.up_to(batch, last)
            if old:
                yield old
            if len(old) < len(batch):
                return

    def _rewrite(self, last: tuple[datetime, int], content: bool) -> None:
        """Fetch the history from its start and rewrite the stored revisions up to `last` (timestamp, rev id):
        upserts by rev_id, nothing is delivered."""
        for old in self._history_until(last, content):
            if self._stop.is_set():
                raise Cancelled("stopped before writing")
            self._write(old)

    def _verify(self) -> None:
        """Once caught up (spawn.completeness says when): the wiki's history without content up to the resume
        point, compared by revision id with the stored one; the revisions missing from the store are written
        (with content when a subscriber wants it: those revisions are then read again by id with it)."""
        now = self._now()
        if not self.complete:
            self._caught_up_at = None
            return
        if self._caught_up_at is None:
            self._caught_up_at = now
        due = completeness.check_at(caught_up_at=self._caught_up_at, last_checked=self._checked_at,
                                    every_s=self.revisit_max_s)
        if not self._verify_now and (due is None or now < due):
            return
        self._verify_now = False
        host, page_id = self.client.host, self.resolved.page_id
        state = self.store.page(host, page_id)
        if state is None:       # nothing stored to compare (a page without revisions)
            self._checked_at = now
            return
        last = (state.latest_timestamp, state.latest_rev_id)
        on_wiki = [r for old in self._history_until(last) for r in old]
        stored = list(self.store.history(host, page_id))
        found = completeness.compare((r.rev_id for r in stored), (r.rev_id for r in on_wiki))
        where = {"title": self.title, "page_id": page_id, "wiki": host}
        shown = self._apply_visibility(completeness.visibility(stored, on_wiki), where)
        if found.missing:
            self.proven = False
            logger.warning("source.history_repair", extra={**where, "missing": len(found.missing),
                                                           "extra": len(found.extra)})
        if found.missing or shown:
            # one write for both: with content it reads the whole stored range again
            self._write_again({*found.missing, *shown}, on_wiki)
        if found.missing:
            self.metrics.revisions_repaired.labels(wiki=host).inc(len(found.missing))
            self._load(self.store.page(host, page_id))
        if found.extra:
            logger.warning("source.stored_not_on_wiki", extra={**where, "extra": len(found.extra)})
        outcome = "equal" if found.equal else "repaired" if found.complete_after_repair else "differs"
        self.metrics.history_checks.labels(wiki=host, outcome=outcome).inc()
        self._checked_at, self.proven = now, found.complete_after_repair

    def _recheck_visibility(self) -> None:
        """Revision deletion named these revisions: read them again (50 a request, never the whole history)
        and hide or show their stored fields as the wiki now does. A comparison of the whole history due in
        this pass covers them instead."""
        with self._lock:
            revs, self._recheck_revs = self._recheck_revs, set()
        if not revs or self._verify_now or self.deleted:
            return
        try:
            host, page_id = self.client.host, self.resolved.page_id
            on_wiki = self.client.revisions_by_id(self.resolved, revs, **self._kw())
            stored = [r for r in self.store.history(host, page_id) if r.rev_id in revs]
            where = {"title": self.title, "page_id": page_id, "wiki": host}
            shown = self._apply_visibility(completeness.visibility(stored, on_wiki), where)
            if shown:
                self._write_again(shown, on_wiki)
        except BaseException:
            with self._lock:
                self._recheck_revs |= revs      # read again at the next pass
            raise

    def _hide_announced(self) -> None:
        """Remove the fields the feed's revision deletions hid from every stored copy: the wiki's log is its
        word that they are hidden, so this costs no request. The re-read of those revisions that follows
        (_recheck_visibility) writes back anything shown again since."""
        with self._lock:
            hide, self._hide_now = self._hide_now, ()
        if not hide:
            return
        vis = completeness.Visibility(tuple(completeness.Hide.of(rev_id, names) for rev_id, names in hide), ())
        try:
            self._apply_visibility(vis, {"title": self.title, "wiki": self.client.host})
        except BaseException:
            with self._lock:
                self._hide_now = joined(hide, self._hide_now)     # hiding again is harmless: all at the next pass
            raise

    def _write_again(self, rev_ids: Iterable[int], on_wiki: list[Revision]) -> None:
        """Write these revisions of the wiki's listing; with their texts, read by revision id (50 a request),
        when a subscriber wants content."""
        if self._stop.is_set():
            raise Cancelled("stopped before writing")
        wanted = set(rev_ids)
        if self._need()[1]:
            revisions = self.client.revisions_by_id(self.resolved, wanted, content=True, **self._kw())
            if self._stop.is_set():
                raise Cancelled("stopped before writing")
            self._write(revisions)
        else:
            self._write([r for r in on_wiki if r.rev_id in wanted])

    def _apply_visibility(self, vis: completeness.Visibility, where: dict) -> tuple[int, ...]:
        """Revision deletion seen by the history check: hidden fields leave every stored copy. Returns the
        revisions the wiki shows again, for the caller to write again."""
        host = self.client.host
        # a revision not stored yet has nothing to hide (the wiki's answer will carry the flags)
        hidden = [h.rev_id for h in vis.hide
                  if self.store.hide_revision_fields(host, h.rev_id, text=h.text, comment=h.comment, user=h.user)]
        if hidden or vis.show:
            logger.info("source.visibility", extra={**where, "hidden": hidden, "shown": list(vis.show)})
            self.metrics.visibility_changes.labels(wiki=host, change="hidden").inc(len(hidden))
            self.metrics.visibility_changes.labels(wiki=host, change="shown").inc(len(vis.show))
        return vis.show

    def _until_check(self) -> float | None:
        """Seconds until the history's next comparison with the wiki's (None: none planned)."""
        due = completeness.check_at(caught_up_at=self._caught_up_at if self.complete else None,
                                    last_checked=self._checked_at, every_s=self.revisit_max_s)
        return None if due is None else max(0.0, due - self._now())

    def _batches(self, start: datetime | None, content: bool):
        """The page's history from `start`, beginning with the opening batch if it was read from there."""
        opening, self._opening = self._opening, None
        kw = self._kw()
        if opening is not None and opening.batch is not None and (opening.start, opening.content) == (start, content):
            return self.client.continue_history(opening, **kw)
        return self.client.revision_batches(self.resolved, start=start, content=content, **kw)

    def _load(self, state: PageState | None) -> None:
        """Credit every subscriber from the page's stored count up to its resume point (`state`). Rows past
        the resume point belong to a batch a crash interrupted: they are not counted here and will be
        fetched, written and delivered again."""
        self._credit(self._stored(state))

    def _credit(self, log: StoredLog) -> None:
        """Credit every subscriber from `log`, in the source's thread: a subscriber capped below the stored
        count needs an older id, read here (never under the registry's lock, which polls wait on)."""
        with self._lock:
            self._log = log
            subs = list(self._subs.values())
            released, self._unnamed = [s for s in self._unnamed if s.id not in self._subs], []
        for sub in subs:
            sub.credit(log)
        if log.wants_older:
            log.load_older()
            for sub in subs + released:
                sub.credit(log)
        for sub in subs:
            if sub.at_limit():
                self._release(sub)

    def _stored(self, state: PageState | None) -> StoredLog:
        """The stored log from the page's row and its newest revisions (at most RECENT_MAX, from the span
        before the newest that RECENT_SPAN_MIN describes): a few reads however long the history. A row
        without a count (written before the store kept one) is counted from the history once."""
        if state is None:
            return StoredLog(0, (), self._older)
        resume = ResumePoint(state.latest_rev_id, state.latest_timestamp)
        recent = []
        span = max(RECENT_SPAN_MIN, timedelta(seconds=20 * self.revisit_max_s))
        for rev in self._stored_before(resume, since=resume.timestamp - span):
            recent.append((rev.rev_id, rev.timestamp.timestamp()))
            if len(recent) == RECENT_MAX:
                break
        count = state.revisions
        if count < len(recent) or not recent:
            count = sum(1 for _ in self._stored_before(resume))
        return StoredLog(count, recent[::-1], self._older)

    def _stored_before(self, resume: ResumePoint, since: datetime | None = None):
        """Stored revisions up to `resume`, newest first."""
        for rev in self.store.history(self.client.host, self.resolved.page_id, since=since, until=resume.timestamp):
            if (rev.timestamp, rev.rev_id) <= (resume.timestamp, resume.rev_id):
                yield rev

    def _older(self, newest: tuple[int, float]) -> list[int]:
        """Every stored id up to `newest` (rev id, epoch seconds), oldest first: read only for a subscriber
        capped below the stored count, once per source."""
        resume = ResumePoint(newest[0], datetime.fromtimestamp(newest[1], timezone.utc))
        return [rev.rev_id for rev in self._stored_before(resume)][::-1]

    def _allowances(self) -> dict[Subscriber, int | None]:
        """What each subscriber may take now (None = unlimited)."""
        return {s: s.remaining() for s in self.subscribers()}

    @contextmanager
    def _pledged(self) -> Iterator[dict[Subscriber, int | None]]:
        """What each subscriber may take of the batch decided now, spent when it is written
        (Subscriber.pledge: a lease lowered meanwhile is not reported applied before that)."""
        subs = self.subscribers()
        try:
            yield {s: s.pledge() for s in subs}
        finally:
            for s in subs:
                s.settle()

    def _need(self, allowances: dict[Subscriber, int | None] | None = None) -> tuple[int | None, bool]:
        """(how many more revisions some subscriber wants, None = no bound; whether any wants content)."""
        allowances = self._allowances() if allowances is None else allowances
        wants = list(allowances.values())
        bounded = [w for w in wants if w is not None]
        need = 0 if not wants else (None if len(bounded) < len(wants) else max(bounded))
        return need, any(s.spec.content for s in allowances)

    def _harvest(self) -> None:
        checked = [(s, s.lease_gen) for s in self.subscribers()]
        state = self.store.page(self.client.host, self.resolved.page_id)
        resume = None if state is None else ResumePoint(state.latest_rev_id, state.latest_timestamp)
        with self._lock:
            newest = self._log.newest if self._log is not None else None
        if (resume.rev_id if resume else None) != newest:
            # another writer (this page on another node, during a move) stored past our log
            self._load(state)
        for sub, gen in checked:
            sub.mark_synced(gen)
        need, content = self._need()
        if need == 0:
            self._opening = None
            return
        self.complete = False
        announced = self._take_announced(resume, content)
        batches = iter([announced]) if announced else self._batches(resume.timestamp if resume else None, content)
        start = resume

        def fresh_in(batch) -> int:
            return sum(1 for r in batch if start is None or (r.timestamp, r.rev_id) > (start.timestamp, start.rev_id))

        def wanted(pending: int) -> bool:
            more = self._need()[0]
            return more is None or more > pending
        for batch in self._waited(prefetched(batches, self._stop, wanted=wanted, size=fresh_in)):
            self._follow_move(batch)    # the resume point's own revision comes again: a move shows at once
            fresh = [r for r in batch
                     if resume is None or (r.timestamp, r.rev_id) > (resume.timestamp, resume.rev_id)]
            with self._pledged() as allowances:
                need, wants_content = self._need(allowances)
                if need == 0 or (wants_content and not content):
                    return      # a content subscriber arrived: the next pass backfills, then goes on with content
                if need is not None:
                    fresh = fresh[:need]
                if not fresh:
                    continue
                if self._stop.is_set():
                    raise Cancelled("stopped before writing")
                self._write(fresh)
                resume = ResumePoint(fresh[-1].rev_id, fresh[-1].timestamp)
                self._delivered(fresh, allowances)
        if self._need()[0] == 0:
            return          # stopped at the caps (no batch past them was requested): more may be there
        self.complete = self.had_history = True

    def _take_announced(self, resume: ResumePoint | None, content: bool) -> list[Revision] | None:
        """The revisions the fetcher brought, as the harvest's only batch, when they follow on from `resume`
        and carry text as wanted; else None (the history is read from the wiki)."""
        with self._lock:
            fetched, self._announced = self._announced, []
        if resume is None or not fetched or any(r.page_id != self.resolved.page_id for r in fetched):
            return None
        if content and any(r.content is None and not r.text_hidden for r in fetched):
            return None
        if not content:
            fetched = [replace(r, content=None) for r in fetched]
        return chain(resume.rev_id, [r for r in fetched if (r.timestamp, r.rev_id) > (resume.timestamp, resume.rev_id)])

    def _backfill_content(self) -> None:
        """A subscriber wants wikitext but the stored history was harvested without it: fetch the
        stored range again with content and rewrite it (upserts by rev_id; nothing is re-delivered).
        Runs oldest first, so the newest stored row carries content only once the backfill is done."""
        if not self._need()[1]:
            return
        host, page_id = self.client.host, self.resolved.page_id
        newest = next(iter(self.store.history(host, page_id)), None)
        if newest is None or newest.text_hidden or self.store.content(host, newest.rev_id) is not None:
            return
        logger.info("source.content_backfill", extra={"title": self.title, "until_rev_id": newest.rev_id})
        self._rewrite((newest.timestamp, newest.rev_id), content=True)

    def _follow_move(self, batch: list[Revision]) -> None:
        """The newest fetched revisions carry another title: the page was moved; its id goes on as before."""
        moved = page_fate.retitled(self.resolved, batch)
        if moved is None:
            return
        logger.info("source.moved", extra={"title": self.title, "page_id": moved.page_id,
                                           "from": self.resolved.title, "to": moved.title, "wiki": self.client.host})
        self.page = moved
        self._announce()

    def _waited(self, batches):
        """`batches`, counting the time spent waiting for each (the wiki's share of the harvest)."""
        it = iter(batches)
        while True:
            started = time.perf_counter()
            batch = next(it, _END)
            self.metrics.batch_wait.inc(time.perf_counter() - started)
            if batch is _END:
                return
            yield batch

    def _write(self, revisions: list[Revision]) -> None:
        started = time.perf_counter()
        self.store.write(revisions)
        self.metrics.store_write.inc(time.perf_counter() - started)

    def _delivered(self, fresh: list[Revision], allowances: dict[Subscriber, int | None]) -> None:
        ids = [r.rev_id for r in fresh]
        with self._lock:
            assert self._log is not None, "loaded by _prepare before any batch"
            self._log.extend((r.rev_id, r.timestamp.timestamp()) for r in fresh)
            subs = list(self._subs.values())
        self.written += len(fresh)
        self.metrics.revisions_written.labels(wiki=self.client.host).inc(len(fresh))
        for sub in subs:
            # a subscriber that attached during the write takes what it may take now
            taken = sub.deliver(ids, allowances[sub]) if sub in allowances else sub.deliver(ids)
            self.metrics.revisions_delivered.inc(taken)
            if sub.at_limit():
                self._release(sub)

    def _schedule_revisit(self, soon: bool = False) -> None:
        """Queue the page's next "anything new?" check with the batcher. While its wiki's change feed is
        followed, the feed names changed pages: the check is then a safety net at the longest interval."""
        with self._lock:
            if self._log is None:
                return
            n = len(self._log)
            if not n or not self._subs:
                return
            newest = [datetime.fromtimestamp(t, timezone.utc)
                      for t in self._log.newest_timestamps(revisit.window_size(n))]
            last_id = self._log.newest
            if last_id is None:
                return
        interval = revisit.interval_from_history(newest, n)
        age = self._now() - newest[0].timestamp()
        delay = revisit.first_delay(interval, age, self.revisit_min_s, self.revisit_max_s)
        every = revisit.clamp(interval or self.revisit_max_s, self.revisit_min_s, self.revisit_max_s)
        if self._followed():
            delay = every = self.revisit_max_s
        if soon:
            delay = 0.0
        self.batcher.schedule(self.key, self.resolved.page_id, last_id, delay, every, self.wake, self._tenants())

    def _kw(self) -> dict:
        """What every wiki request of this source carries: its stop event, its retry and wait
        reports, and its lane and tenants for an identity's upstream budget."""
        return dict(cancel=self._stop, on_retry=self._on_retry, on_wait=self._on_wait,
                    demand=Demand(FRESH if self.had_history else BACKFILL, self._tenants()))

    def _tenants(self) -> tuple[str, ...]:
        return tuple(sorted({s.spec.tenant_id for s in self.subscribers()}))

    def _on_wait(self, reason: str | None) -> None:
        """Waiting for the upstream budget (reason), or served after such a wait (None)."""
        if self.deleted:
            return      # a deleted page's re-check waits like any request: it still shows deleted
        self._report("waiting" if reason else "running", reason)

    def _on_retry(self, exc: MediaWikiError, delay: float) -> None:
        for sub in self.subscribers():
            sub.note_error(f"{type(exc).__name__}: {exc} (retrying in {delay:.1f}s)")

    def _report(self, state: str, error: str | None = None) -> None:
        for sub in self.subscribers():
            sub.set_state(state, error)


_END = object()


def prefetched(batches, stop: threading.Event, depth: int = 1, wanted: Callable[[int], bool] | None = None,
               size: Callable[[list], int] = len):
    """Iterate `batches` while a helper thread fetches the next one, so the API request of batch
    k+1 overlaps the store write of batch k. Exceptions reach the consumer in order; the helper
    ends when the consumer stops early, when `stop` is set, or at the end. `wanted(pending)`, asked
    before each request but the first with the revisions fetched and not yet consumed (`size` of
    each batch): False ends the helper (a capped subscriber needs no batch beyond its cap)."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    done = threading.Event()
    pending = [0]
    lock = threading.Lock()

    def put(item) -> bool:
        while not (done.is_set() or stop.is_set()):
            try:
                q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            it, first = iter(batches), True
            while True:
                if not first and wanted is not None:
                    with lock:
                        ahead = pending[0]
                    if not wanted(ahead):
                        break
                first = False
                try:
                    batch = next(it)
                except StopIteration:
                    break
                with lock:
                    pending[0] += size(batch)
                if not put((batch, None)):
                    return
            put((_END, None))
        except BaseException as exc:        # handed to the consumer, which re-raises it
            put((_END, exc))

    threading.Thread(target=produce, name="prefetch", daemon=True).start()
    try:
        while True:
            try:
                batch, exc = q.get(timeout=0.2)
            except queue.Empty:
                if stop.is_set():
                    raise Cancelled("stopped") from None
                continue
            if exc is not None:
                raise exc
            if batch is _END:
                return
            yield batch
            with lock:
                pending[0] -= size(batch)
    finally:
        done.set()
