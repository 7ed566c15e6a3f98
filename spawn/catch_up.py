"""Reading a wiki on from its dump (docs/dumps.md, "After the dump"): one thread per set whose CatchUpDuty the hub
gives this node, reading `list=allrevisions` oldest first from the duty's position (the dump's date at first)
through the spawn's client for that wiki (its session, maxlag, and the identity's budget in the backfill lane),
writing every revision as the API path writes it, and reporting where it stands. Once a read finds nothing more it
reads again every `interval_s`: the set follows the wiki's new revisions.

The position is a timestamp, inclusive: all revisions before it are written. allrevisions lists revisions in
timestamp order, so after a batch is written every revision older than the batch's newest is; a reader that starts
again (on this node or another) from the last reported position reads the boundary's revisions twice, which the
store's idempotent writes make harmless.
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Callable, Mapping, Sequence

from shared.dump_wire import CatchUpDuty, CatchUpReport, parse_time, wire_time
from shared.hashing import wiki_key
from shared.revisions.model import Revision
from shared.revisions.store import RevisionStore
from spawn.budget_rules import BACKFILL
from spawn.mediawiki import (RVPROP, BadResponse, Cancelled, MediaWikiClient, MediaWikiError, api_timestamp, listed,
                             revision_from_api)
from spawn.upstream_budget import Demand

logger = logging.getLogger(__name__)

MAX_BATCHES = 20        # requests per read before the reader reports and looks at its duty again
JOIN_S = 2.0

ClientFor = Callable[[str, "str | None"], MediaWikiClient]


def parse_batch(body: dict, wiki: str, content: bool) -> tuple[list[list[Revision]], dict | None, datetime | None]:
    """One allrevisions answer: its revisions grouped by page (each page's oldest first), the continuation, and the
    wiki's clock (`curtimestamp`). A malformed answer raises BadResponse and is fetched again, never read in part."""
    items, more = listed(body, "allrevisions")
    pages: dict[int, list[Revision]] = {}
    for page in items:
        revisions = page.get("revisions") if isinstance(page, dict) else None
        if not isinstance(revisions, list):
            raise BadResponse("an allrevisions page without 'revisions'")
        for r in revisions:
            rev = revision_from_api(wiki, page, r, content)
            pages.setdefault(rev.page_id, []).append(rev)
    now = body.get("curtimestamp")
    grouped = [sorted(revs, key=lambda r: (r.timestamp, r.rev_id)) for _, revs in sorted(pages.items())]
    return grouped, more, parse_time(now) if isinstance(now, str) else None


class CatchUpReader:
    """One set's catch-up. Thread-safe: the poll thread reads report() while its own thread reads the wiki."""

    def __init__(self, duty: CatchUpDuty, client: MediaWikiClient, store: RevisionStore):
        self.duty, self.client, self.store = duty, client, store
        self.wiki = wiki_key(duty.wiki)
        self.demand = Demand(BACKFILL, duty.tenants)
        self._position = parse_time(duty.position or duty.since)
        self._caught_up_to: datetime | None = None
        self._revisions = 0
        self._requests = 0
        self._error: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"catch-up-{duty.set_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def report(self) -> CatchUpReport:
        with self._lock:
            return CatchUpReport(set_id=self.duty.set_id, position=wire_time(self._position),
                                 caught_up_to=None if self._caught_up_to is None else wire_time(self._caught_up_to),
                                 revisions=self._revisions, requests=self._requests, error=self._error)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                more = self.read_once()
            except Cancelled:
                return
            except MediaWikiError as exc:
                with self._lock:
                    self._error = f"{type(exc).__name__}: {exc}"
                logger.warning("catch_up.read_failed", extra={"set_id": self.duty.set_id, "error": self._error})
                more = False
            except Exception as exc:        # a store failure: reported and tried again, never silent
                with self._lock:
                    self._error = f"{type(exc).__name__}: {exc}"
                logger.exception("catch_up.crashed", extra={"set_id": self.duty.set_id})
                more = False
            if not more and self._stop.wait(self.duty.interval_s):
                return

    def read_once(self) -> bool:
        """Up to MAX_BATCHES requests from the position, each batch written before the position passes it. True
        when the wiki has more right away; False once an answer had no continuation (caught up to its clock)."""
        content = self.duty.content
        params = {"list": "allrevisions", "arvprop": RVPROP + ("|content" if content else ""), "arvslots": "main",
                  "arvlimit": "max", "arvdir": "newer", "arvstart": api_timestamp(self._position),
                  "curtimestamp": "1"}
        if self.duty.namespaces is not None:
            params["arvnamespace"] = "|".join(str(n) for n in self.duty.namespaces)
        cont: dict = {}
        for _ in range(MAX_BATCHES):
            pages, more, now = self.client.query({**params, **cont}, cancel=self._stop, demand=self.demand,
                                                 parse=lambda body: parse_batch(body, self.wiki, content))
            if pages:
                self.store.write_pages(pages)
            newest = max((r.timestamp for page in pages for r in page), default=None)
            with self._lock:
                self._requests += 1
                self._revisions += sum(len(page) for page in pages)
                self._error = None
                if newest is not None and newest > self._position:
                    self._position = newest
                if more is None:
                    self._caught_up_to = now or self._caught_up_to
            if more is None:
                return False
            cont = more
        return True


class CatchUpReaders:
    """The catch-ups this node runs, as the hub's duties say; a detach stops them all."""

    def __init__(self, client_for: ClientFor, store: RevisionStore, *, join_s: float = JOIN_S):
        self._client_for, self.store, self.join_s = client_for, store, join_s
        self._readers: dict[str, CatchUpReader] = {}
        self._lock = threading.Lock()

    def apply(self, duties: Sequence[CatchUpDuty]) -> None:
        """Start a reader per named set (from the duty's position), stop the others. A running reader keeps its own
        position: it is at least the one the hub last heard from it."""
        named = {d.set_id: d for d in duties}
        with self._lock:
            for set_id in [s for s in self._readers if s not in named]:
                self._readers.pop(set_id).stop()
            for set_id, duty in named.items():
                if set_id not in self._readers:
                    reader = CatchUpReader(duty, self._client_for(duty.wiki, duty.identity), self.store)
                    self._readers[set_id] = reader
                    reader.start()
                    logger.info("catch_up.started", extra={"set_id": set_id, "from": duty.position or duty.since})

    def reports(self) -> Mapping[str, CatchUpReport]:
        with self._lock:
            readers = list(self._readers.values())
        return {r.duty.set_id: r.report() for r in readers}

    def stop(self) -> None:
        with self._lock:
            readers = list(self._readers.values())
            self._readers = {}
        for r in readers:
            r.stop()
        for r in readers:
            r.join(self.join_s)
