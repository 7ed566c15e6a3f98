"""Reading a wiki on from its dump (docs/dumps.md, "After the dump"): one thread per set whose CatchUpDuty the hub
gives this node, reading `list=allrevisions` oldest first from the duty's position (the dump's date at first)
through the spawn's client for that wiki (its session, maxlag, and the identity's budget in the backfill lane),
writing every revision as the API path writes it, and reporting where it stands. Once a read finds nothing more it
reads again every `interval_s`: the set follows the wiki's new revisions.

The position is a timestamp, inclusive: all revisions before it are written. allrevisions lists revisions in
timestamp order, so after a batch is written every revision older than the batch's newest is; a reader that starts
again (on this node or another) from the last reported position reads the boundary's revisions twice, which the
store's idempotent writes make harmless. A running reader remembers the revisions it wrote at its position's second
(`past_edge`), so reading on while it follows neither writes nor counts them again.

allrevisions shows what the wiki holds now, never what left it, nor what came back behind the position. So the same
requests also read the wiki's log (`list=logevents`, in the same query: no request of its own; every type, because
the query's own filter takes only one) from the reader's log position, and apply each entry to the store as the
change feed's sources do: a deleted page's texts are removed and the page marked deleted; an undeleted page's
history is read again whole (its revisions come back with their old timestamps) and the mark lifted, and so is the
history of a page that an import or a history merge gave old revisions; revision deletion removes the fields the
log says are now hidden from every table, and fields shown again are read again. The reported position is the
earlier of the two positions, so a reader that starts again misses neither a revision nor a log entry.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterator, Mapping, Sequence

from shared.census_wire import CensusReport
from shared.dump_wire import CatchUpDuty, CatchUpReport, parse_time, wire_time
from shared.hashing import wiki_key
from shared.revisions.model import Revision
from shared.revisions.store import RevisionStore
from spawn.budget_rules import BACKFILL
from spawn.census import Census
from spawn.census import due as census_due
from spawn.completeness import Hide
from spawn.feed_events import (Event, HistoryMerged, Imported, MalformedItem, PageDeleted, PageRestored,
                               VisibilityChanged, from_logevent, parse)
from spawn.mediawiki import PageDeleted as MediaWikiPageDeleted
from spawn.mediawiki import (RVPROP, BadResponse, Cancelled, MediaWikiClient, MediaWikiError, PageInfo, PageUnavailable,
                             api_timestamp, revision_from_api)
from spawn.upstream_budget import Demand

logger = logging.getLogger(__name__)

MAX_BATCHES = 20        # requests per read before the reader reports and looks at its duty again
LOG_PROPS = "ids|title|type|timestamp|details"
JOIN_S = 2.0

ClientFor = Callable[[str, "str | None"], MediaWikiClient]


@dataclass(frozen=True)
class Batch:
    pages: list[list[Revision]]         # each page's revisions, oldest first
    logged: list[Event]                 # the log's entries that change a history, oldest first
    logged_to: datetime | None          # the newest log entry's time (None: no entry)
    more: dict | None                   # the continuation
    now: datetime | None                # the wiki's clock
    log_done: bool = False              # the log was read to `now` by this request (nothing more of it follows)


def parse_batch(body: dict, wiki: str, content: bool) -> Batch:
    """One answer of allrevisions and the log: its revisions grouped by page (each page's oldest first), its
    log entries, the continuation, and the wiki's clock (`curtimestamp`). A malformed answer raises BadResponse and
    is fetched again, never read in part."""
    more = body.get("continue")
    if more is not None and not isinstance(more, dict):
        raise BadResponse("'continue' is not an object")
    query = body.get("query")
    # a continuation runs only the lists that have more: either may be absent, not both
    if not isinstance(query, dict) or not {"allrevisions", "logevents"} & query.keys():
        raise BadResponse("an answer without 'allrevisions' or 'logevents'")
    items, entries = query.get("allrevisions", []), query.get("logevents", [])
    if not isinstance(items, list) or not isinstance(entries, list):
        raise BadResponse("'allrevisions' or 'logevents' is not a list")
    pages: dict[int, list[Revision]] = {}
    for page in items:
        revisions = page.get("revisions") if isinstance(page, dict) else None
        if not isinstance(revisions, list):
            raise BadResponse("an allrevisions page without 'revisions'")
        for r in revisions:
            rev = revision_from_api(wiki, page, r, content)
            pages.setdefault(rev.page_id, []).append(rev)
    logged: list[Event] = []
    for entry in entries:
        try:
            event = parse(from_logevent(entry)) if isinstance(entry, dict) else None
        except MalformedItem as exc:
            # one entry the wiki shows in part (a title hidden by suppression): asking again cannot change it
            logger.warning("catch_up.log_entry_skipped", extra={"error": str(exc), "logid": entry.get("logid")})
            continue
        if event is not None:
            logged.append(event)
    now = body.get("curtimestamp")
    grouped = [sorted(revs, key=lambda r: (r.timestamp, r.rev_id)) for _, revs in sorted(pages.items())]
    # the log was read whole when it ran and has no `lecontinue`
    log_done = "logevents" in query and "lecontinue" not in (more or {})
    return Batch(grouped, sorted(logged, key=lambda e: e.timestamp), max((e.timestamp for e in logged), default=None),
                 more, parse_time(now) if isinstance(now, str) else None, log_done)


def past_edge(pages: Sequence[Sequence[Revision]], position: datetime, edge: frozenset[int]
              ) -> tuple[list[list[Revision]], datetime, frozenset[int]]:
    """A batch read from `position` (inclusive) without the revisions already written at that second (`edge`: their
    ids), and the position and edge after it: the batch's newest second and the ids written at it."""
    fresh = [kept for page in pages
             if (kept := [r for r in page if not (r.timestamp == position and r.rev_id in edge)])]
    newest = max((r.timestamp for page in fresh for r in page), default=position)
    if newest < position:
        return fresh, position, edge
    at = frozenset(r.rev_id for page in fresh for r in page if r.timestamp == newest)
    return fresh, newest, (edge | at) if newest == position else at


class CatchUpReader:
    """One set's catch-up. Thread-safe: the poll thread reads report() while its own thread reads the wiki."""

    def __init__(self, duty: CatchUpDuty, client: MediaWikiClient, store: RevisionStore):
        self.duty, self.client, self.store = duty, client, store
        self.wiki = wiki_key(duty.wiki)
        self.demand = Demand(BACKFILL, duty.tenants)
        self._position = parse_time(duty.position or duty.since)
        self._log_position = self._position       # every log entry before it is applied
        self._edge: frozenset[int] = frozenset()   # revisions written at the position's second
        self._caught_up_to: datetime | None = None
        self._revisions = 0
        self._requests = 0
        self._error: str | None = None
        self._census: Census | None = None          # running; stepped on this reader's thread only
        self._census_done_at: datetime | None = None        # when the hub last told it a census of its ended
        self._census_report: CensusReport | None = None     # the running one's, as of its step
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"catch-up-{duty.set_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def retune(self, duty: CatchUpDuty) -> None:
        """The hub's duty as it stands now (when the next census may start); the reader keeps its positions."""
        with self._lock:
            self.duty = duty

    def report(self) -> CatchUpReport:
        with self._lock:
            return CatchUpReport(set_id=self.duty.set_id, position=wire_time(min(self._position, self._log_position)),
                                 caught_up_to=None if self._caught_up_to is None else wire_time(self._caught_up_to),
                                 revisions=self._revisions, requests=self._requests, error=self._error,
                                 census=self._census_report)

    def _run(self) -> None:
        # a census cut short keeps its listing: another reader may list again meanwhile (its rows are its own),
        # and the store's TTL clears them (cassandra/schema.cql)
        self._read()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                more = self.read_once() or self.census_step()
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
        """Up to MAX_BATCHES requests from the positions, each batch written (and its log entries applied) before the
        positions pass it. True when the wiki has more right away; False once an answer had no continuation (caught
        up to its clock)."""
        content = self.duty.content
        params = {"list": "allrevisions|logevents", "arvprop": RVPROP + ("|content" if content else ""),
                  "arvslots": "main", "arvlimit": "max", "arvdir": "newer", "arvstart": api_timestamp(self._position),
                  "leprop": LOG_PROPS, "lelimit": "max", "ledir": "newer",
                  "lestart": api_timestamp(self._log_position), "curtimestamp": "1"}
        if self.duty.namespaces is not None:
            params["arvnamespace"] = "|".join(str(n) for n in self.duty.namespaces)
        cont: dict = {}
        for _ in range(MAX_BATCHES):
            batch = self.client.query({**params, **cont}, cancel=self._stop, demand=self.demand,
                                      parse=lambda body: parse_batch(body, self.wiki, content))
            pages, position, edge = past_edge(batch.pages, self._position, self._edge)
            if pages:
                self.store.write_pages(pages)
            applied = self._apply(batch.logged)
            with self._lock:
                self._requests += 1 + applied
                self._revisions += sum(len(page) for page in pages)
                self._error = None
                self._position, self._edge = position, edge
                logged_to = batch.now if batch.log_done and batch.now is not None else batch.logged_to
                if logged_to is not None and logged_to > self._log_position:
                    self._log_position = logged_to
                if batch.more is None:
                    self._caught_up_to = batch.now or self._caught_up_to
            if batch.more is None:
                return False
            cont = batch.more
        return True

    def census_step(self) -> bool:
        """Between reads, once caught up: a step of the census's listing (spawn.census), started when one is due.
        True while the listing goes on (the reader reads on without waiting its interval). Once it is whole the
        hub has its shards proven on the nodes, and says when it holds the census finished (`census_closed`): the
        listing is then removed."""
        with self._lock:
            duty, census, done_at, cut = self.duty, self._census, self._census_done_at, self._caught_up_to
        now = datetime.now(timezone.utc)
        if census is not None and duty.census_closed == wire_time(census.started_at):
            census.close()
            with self._lock:
                self._census, self._census_report, self._census_done_at = None, None, now
            logger.info("census.finished", extra={"set_id": duty.set_id, "cut": wire_time(census.cut)})
            return False
        if census is None:
            after = None if duty.census_after is None else parse_time(duty.census_after)
            if cut is None or duty.census_shards <= 0 or not census_due(
                    now=now, after=after, finished_at=done_at, every_s=duty.census_every_s):
                return False
            census = Census(duty.set_id, self.wiki, cut, duty.census_shards, now, self.store,
                            namespaces=duty.namespaces)
            with self._lock:
                self._census = census       # a step that fails is taken again, not the census started over
                self._census_report = census.report()
            logger.info("census.started", extra={"set_id": duty.set_id, "cut": wire_time(cut)})
        if census.listed_whole:
            return False                    # the shards are proven elsewhere: the hub says when it is done
        more = census.step(self.client, cancel=self._stop, demand=self.demand)
        report = census.report()
        with self._lock:
            self._census_report = report
        if report.listed_whole:
            logger.info("census.listed", extra={"set_id": duty.set_id, "cut": report.cut, "listed": report.listed,
                                                "requests": report.requests})
        return more

    def _apply(self, events: Sequence[Event]) -> int:
        """The log's entries on the store, oldest first (moves need nothing: allrevisions lists a move's revision
        under the new title). Returns the requests it made."""
        requests = 0
        namespaces = self.duty.namespaces
        for event in events:
            if namespaces is not None and event.ns not in namespaces:
                continue
            if isinstance(event, PageDeleted):
                page_id = event.page_id or self.store.page_id(self.wiki, event.title)
                if page_id:
                    self.store.mark_deleted(self.wiki, page_id)
            elif isinstance(event, PageRestored) and event.page_id:
                requests += self._read_again(self._by_id(event))
                self.store.mark_restored(self.wiki, event.page_id)
            elif isinstance(event, Imported) and event.page_id:
                requests += self._read_again(self._by_id(event))
            elif isinstance(event, HistoryMerged):
                # revisions moved to the destination keep their ids and times: read it again by title
                requests += self._read_again_titled(event.dest_title)
            elif isinstance(event, VisibilityChanged):
                if event.hidden_after:
                    for hide in (Hide.of(rev_id, event.hidden_after) for rev_id in event.rev_ids):
                        self.store.hide_revision_fields(self.wiki, hide.rev_id, text=hide.text, comment=hide.comment,
                                                        user=hide.user)
                if event.unhidden:
                    # shown again: read again, with what the wiki shows now
                    again = self.client.revisions_of_pages([event.page_id], event.rev_ids, content=self.duty.content,
                                                           cancel=self._stop, demand=self.demand)
                    requests += 1
                    if again:
                        self.store.write_pages(list(again.values()))
        return requests

    def _by_id(self, event: Event) -> Iterator[list[Revision]]:
        page = PageInfo(event.page_id, event.ns, event.title, 0)
        return self.client.revision_batches(page, content=self.duty.content, cancel=self._stop, demand=self.demand)

    def _read_again_titled(self, title: str) -> int:
        """A page's whole history by title, its first batch read with the title's resolution. Returns the
        requests it made."""
        try:
            opening = self.client.open_history(title, content=self.duty.content, cancel=self._stop,
                                               demand=self.demand)
        except PageUnavailable:
            return 1                # deleted or moved since: its own log entries follow
        return self._read_again(self.client.continue_history(opening, cancel=self._stop, demand=self.demand))

    def _read_again(self, batches: Iterator[list[Revision]]) -> int:
        """A page's history read again whole and written (revisions that appeared behind the position). Returns
        the batches read: a request each."""
        requests = 0
        try:
            for revisions in batches:
                requests += 1
                if revisions:
                    self.store.write_pages([revisions])
        except MediaWikiPageDeleted:
            pass                    # gone again since: its own log entry follows
        return requests


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
                if set_id in self._readers:
                    self._readers[set_id].retune(duty)
                else:
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
