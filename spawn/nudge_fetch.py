"""The revisions the change feed announced, fetched for many pages of one wiki at once.

A nudge names the revisions an edit made (`Nudge.rev_ids`). Read page by page, each nudged page costs one request
of the identity's budget; asked by revision id, 50 revisions of any pages cost one. A source takes what arrives
only when it follows on from its resume point without a gap (`chain`); otherwise (a revision hidden or deleted
meanwhile, an edit the feed has not reported yet) it reads its history from the wiki as before.
"""
import logging
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

from shared.revisions.model import Revision
from spawn.mediawiki import MAX_TITLES, Cancelled, MediaWikiClient, MediaWikiError, PageInfo
from spawn.upstream_budget import FRESH, Demand
from spawn.worker_thread import running

logger = logging.getLogger(__name__)

Deliver = Callable[[list[Revision] | None], None]      # None: not fetched, read the history as before


def chain(resume_rev_id: int, revisions: Sequence[Revision]) -> list[Revision] | None:
    """`revisions` oldest first when each is the child of the one before it and the first is the child of
    `resume_rev_id` (no revision between them missing), else None."""
    ordered = sorted(revisions, key=lambda r: (r.timestamp, r.rev_id))
    parent = resume_rev_id
    for r in ordered:
        if r.parent_id != parent:
            return None
        parent = r.rev_id
    return ordered or None


@dataclass
class _Want:
    page: PageInfo
    rev_ids: set[int]
    content: bool
    tenants: tuple[str, ...]
    deliver: Deliver


def rounds(wants: Sequence[_Want]) -> list[list[_Want]]:
    """The requests a round sends: pages with the same content flag packed MAX_TITLES revision ids a request,
    a page's ids never split over two (one with more ids than that gets a request of its own)."""
    out: list[list[_Want]] = []
    for content in (False, True):
        current: list[_Want] = []
        for want in (w for w in wants if w.content is content):
            if current and sum(len(w.rev_ids) for w in current) + len(want.rev_ids) > MAX_TITLES:
                out.append(current)
                current = []
            current.append(want)
        if current:
            out.append(current)
    return out


class RevisionFetcher:
    """One wiki's announced revisions and the thread that fetches them. Thread-safe."""

    def __init__(self, client: MediaWikiClient, *, autostart: bool = True):
        self.client = client
        self.autostart = autostart         # False: rounds run only when fetch_pending is called
        self._wants: dict[str, _Want] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.requests = 0

    def fetch(self, key: str, page: PageInfo, rev_ids: Sequence[int], *, content: bool,
              tenants: tuple[str, ...], deliver: Deliver) -> None:
        """Fetch `rev_ids` of `page` with the next round, and hand them (or None) to `deliver`. Another call for
        the same key before that round adds its ids."""
        with self._cond:
            old = self._wants.get(key)
            ids = set(rev_ids) | (old.rev_ids if old is not None and old.content == content else set())
            self._wants[key] = _Want(page, ids, content, tenants, deliver)
            self._cond.notify()
        if self.autostart:
            self._ensure_thread()

    def fetch_pending(self) -> int:
        """One round: every page waiting, MAX_TITLES revision ids a request; returns the requests sent."""
        with self._cond:
            wants, self._wants = list(self._wants.values()), {}
        sent = 0
        for group in rounds(wants):
            ids = [r for w in group for r in w.rev_ids]
            tenants = tuple(sorted({t for w in group for t in w.tenants}))
            try:
                found = self.client.revisions_of_pages([w.page.page_id for w in group], ids,
                                                       content=group[0].content, cancel=self._stop,
                                                       demand=Demand(FRESH, tenants))
                sent += 1
            except Exception as exc:        # noqa: BLE001 - whatever it was, the sources read as before
                level = logging.WARNING if isinstance(exc, (MediaWikiError, Cancelled)) else logging.ERROR
                logger.log(level, "nudge_fetch.failed", extra={"host": self.client.host, "error": repr(exc)})
                found = None
            for want in group:
                want.deliver(None if found is None else [r for r in found.get(want.page.page_id, [])
                                                         if r.rev_id in want.rev_ids])
        self.requests += sent
        return sent

    def _ensure_thread(self) -> None:
        with self._cond:
            self._thread = running(self._thread, self._stop, self._run, f"nudge-fetch-{self.client.host}")

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                while not self._wants and not self._stop.is_set():
                    self._cond.wait(60.0)
            if not self._stop.is_set():
                self.fetch_pending()

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            wants, self._wants = list(self._wants.values()), {}
            self._cond.notify_all()
        for want in wants:
            want.deliver(None)
