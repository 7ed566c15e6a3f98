"""The change feed readers this node runs for the cluster: one thread per wiki whose FeedDuty the hub gives
it (one node per wiki), reading `list=recentchanges` on from its position every `interval_s` through the
spawn's client for that wiki (its session, maxlag and the identity's budget, in the backfill lane), and
keeping what it read until the hub acknowledges it (spawn.feed_buffer decides). The thin I/O shell: the
hub routes the changes to the nodes that fetch those pages.
"""
from __future__ import annotations

import logging
import threading
from contextlib import nullcontext
from typing import Callable, Iterable, Mapping

from shared.feed_wire import FeedDuty, FeedGap, FeedReport
from shared.hashing import wiki_key
from spawn import feed_buffer
from spawn.change_feed import ChangeFeed
from spawn.feed_position import FeedPosition
from spawn.mediawiki import Cancelled, MediaWikiClient, MediaWikiError
from spawn.metrics import SpawnMetrics
from spawn.upstream_budget import FEED, Demand

logger = logging.getLogger(__name__)

ClientFor = Callable[[str, "str | None"], MediaWikiClient]


def _position(token: str | None) -> FeedPosition | None:
    return None if token is None else FeedPosition.parse(token)


def _demand(duty: FeedDuty) -> Demand:
    # the feed lane: first in line on this node, but backfill demand to the hub. A node waiting in the freshness
    # lane takes the identity's slot from a node that holds it for a backfill, and a read every few seconds would
    # take it at every read (with one request in flight, the other nodes' backfill stalled). The changes the feed
    # finds are freshness work: their pages' requests are.
    return Demand(FEED, duty.tenants)


class FeedReader:
    """One wiki's feed. Thread-safe: the poll thread applies duties and reports, its own thread reads."""

    def __init__(self, wiki: str, client: MediaWikiClient, duty: FeedDuty, metrics: SpawnMetrics):
        self.wiki = wiki
        self.duty = duty
        self.metrics = metrics
        self.feed = ChangeFeed(client, demand=_demand(duty))
        self._buf = feed_buffer.start(_position(duty.position))
        self._error: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"feed-{wiki_key(self.wiki)}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def apply(self, duty: FeedDuty) -> None:
        with self._lock:
            self._buf = feed_buffer.acknowledge(self._buf, _position(duty.position))
            self.duty = duty
            self.feed.demand = _demand(duty)

    def report(self) -> FeedReport:
        with self._lock:
            return feed_buffer.report(self._buf, error=self._error, requests=self.feed.requests)

    def _run(self) -> None:
        budget = self.feed.client.budget
        with budget.following() if budget is not None else nullcontext():
            while not self._stop.is_set():
                more = self.read_once()
                if not more and self._stop.wait(self.duty.interval_s):
                    return

    def read_once(self) -> bool:
        """One read from the buffer's position; True when the feed has more right away."""
        with self._lock:
            buf = self._buf
        if buf.full:
            return False
        try:
            if buf.position is None:
                read = self.feed.head_read(cancel=self._stop)
            else:
                read = self.feed.read(buf.position, cancel=self._stop)
        except Cancelled:
            return False
        except MediaWikiError as exc:
            with self._lock:
                self._error = f"{type(exc).__name__}: {exc}"
            logger.warning("feed.read_failed", extra={"wiki": self.wiki, "error": self._error})
            return False
        with self._lock:
            if self._buf.position != buf.position:
                return True         # an acknowledgement started reading over meanwhile
            self._error = None
            if read.gap is not None:
                gap = FeedGap(read.gap.start.isoformat(), None if read.gap.end is None else read.gap.end.isoformat())
                self._buf = feed_buffer.after_gap(self._buf, gap, read.gap.resume)
                return True
            before = len(self._buf.changes)
            self._buf = feed_buffer.after_read(self._buf, read.events, read.position, more=read.more, now=read.now)
        for change in self._buf.changes[before:]:
            self.metrics.feed_changes.labels(wiki=wiki_key(self.wiki), kind=change.kind).inc()
        return read.more


class FeedReaders:
    """The readers this node runs, as the hub's duties say; a detach stops them all."""

    def __init__(self, client_for: ClientFor, metrics: SpawnMetrics | None = None):
        self._client_for = client_for
        self.metrics = metrics or SpawnMetrics()
        self._readers: dict[str, FeedReader] = {}
        self._lock = threading.Lock()

    def apply(self, duties: Mapping[str, FeedDuty]) -> None:
        """Start the readers the duties name, acknowledge the running ones, stop the others."""
        with self._lock:
            for wiki in [w for w in self._readers if w not in duties]:
                self._readers.pop(wiki).stop()
                logger.info("feed.stopped", extra={"wiki": wiki})
            for wiki, duty in duties.items():
                reader = self._readers.get(wiki)
                if reader is not None and reader.duty.identity == duty.identity:
                    reader.apply(duty)
                    continue
                if reader is not None:
                    reader.stop()
                reader = FeedReader(wiki, self._client_for(wiki, duty.identity), duty, self.metrics)
                self._readers[wiki] = reader
                reader.start()
                logger.info("feed.started", extra={"wiki": wiki, "position": duty.position})

    def reports(self) -> dict[str, FeedReport]:
        with self._lock:
            readers = list(self._readers.values())
        return {r.wiki: r.report() for r in readers}

    def stop(self) -> None:
        self.apply({})


class FollowedWikis:
    """The wikis whose feed the hub follows: their sources revisit only as a safety net."""

    def __init__(self) -> None:
        self._wikis: frozenset[str] = frozenset()

    def __contains__(self, wiki: str) -> bool:
        return wiki in self._wikis

    def update(self, wikis: Iterable[str]) -> frozenset[str]:
        """Set the followed wikis; returns those no longer followed (their pages need checks again)."""
        new = frozenset(wikis)
        dropped, self._wikis = self._wikis - new, new
        return dropped
