"""When to look at a finished page again, and batched change detection for the pages of one wiki.

The rule (seed design): over the most recent max(20, 10 % of stored) revisions, the edit rate is
λ = n / (t1 − t0); the page is due again once now − last revision > E(x) = 1/λ, bounded by a
minimum and a maximum interval. Change detection asks prop=info for up to 50 pages per request and
wakes only the sources whose lastrevid moved.
"""
import heapq
import itertools
import logging
import math
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Sequence

from spawn.mediawiki import MAX_TITLES, MediaWikiClient, MediaWikiError
from spawn.upstream_budget import FRESH, Demand
from spawn.worker_thread import running

logger = logging.getLogger(__name__)


def window_size(stored: int) -> int:
    """How many of the newest revisions the rate is measured over."""
    return min(stored, max(20, math.ceil(stored * 0.1)))


def expected_interval(n: int, span_s: float) -> float | None:
    """E(x) = 1/λ with λ = n / span; None when the window has no extent (rate unknown)."""
    if n <= 0 or span_s <= 0:
        return None
    return span_s / n


def interval_from_history(newest_first: Sequence[datetime], stored: int) -> float | None:
    """E(x) from the newest revisions' timestamps (newest first) of a page with `stored` revisions."""
    window = list(newest_first[:window_size(stored)])
    if len(window) < 2:
        return None
    return expected_interval(len(window), (window[0] - window[-1]).total_seconds())


def clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def first_delay(interval: float | None, last_rev_age_s: float, min_s: float, max_s: float) -> float:
    """Seconds from now until the first check after the history is complete."""
    e = clamp(interval if interval is not None else max_s, min_s, max_s)
    return clamp(e - last_rev_age_s, min_s, max_s)


@dataclass(order=True)
class _Entry:
    due: float
    seq: int
    key: str = field(compare=False)
    page_id: int = field(compare=False)
    last_rev_id: int = field(compare=False)
    interval_s: float = field(compare=False)
    wake: Callable[[], None] = field(compare=False)
    tenants: tuple[str, ...] = field(default=(), compare=False)
    cancelled: bool = field(default=False, compare=False)


class RevisitBatcher:
    """One wiki's revisit queue and its checker thread. Thread-safe."""

    def __init__(self, client: MediaWikiClient, *, min_s: float, clock=time.monotonic):
        self.client = client
        self.min_s = min_s
        self._clock = clock
        self._heap: list[_Entry] = []
        self._by_key: dict[str, _Entry] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.requests = 0

    def schedule(self, key: str, page_id: int, last_rev_id: int, delay_s: float, interval_s: float,
                 wake: Callable[[], None], tenants: tuple[str, ...] = ()) -> None:
        """(Re)place `key` in the queue: checked in `delay_s`, then every `interval_s` while unchanged.
        `tenants`: whose freshness demand the check is, for an identity's upstream budget."""
        with self._cond:
            self._cancel_locked(key)
            entry = _Entry(self._clock() + delay_s, next(self._seq), key, page_id, last_rev_id, interval_s, wake,
                           tenants)
            self._by_key[key] = entry
            heapq.heappush(self._heap, entry)
            self._cond.notify()
        self._ensure_thread()

    def cancel(self, key: str) -> None:
        with self._cond:
            self._cancel_locked(key)

    def _cancel_locked(self, key: str) -> None:
        old = self._by_key.pop(key, None)
        if old is not None:
            old.cancelled = True

    def __len__(self) -> int:
        with self._cond:
            return len(self._by_key)

    def check_due(self) -> int:
        """One round: check every due page (≤ 50 per request); returns how many sources were woken."""
        now = self._clock()
        due: list[_Entry] = []
        with self._cond:
            while self._heap and self._heap[0].due <= now:
                entry = heapq.heappop(self._heap)
                if not entry.cancelled:
                    due.append(entry)
        woken = 0
        for i in range(0, len(due), MAX_TITLES):
            chunk = due[i:i + MAX_TITLES]
            try:
                tenants = tuple(sorted({t for e in chunk for t in e.tenants}))
                latest = self.client.last_rev_ids([e.page_id for e in chunk], cancel=self._stop,
                                                  demand=Demand(FRESH, tenants))
                self.requests += 1
            except MediaWikiError as exc:
                logger.warning("revisit.check_failed", extra={"host": self.client.host, "error": str(exc)})
                latest = None
            for entry in chunk:
                moved = latest is not None and latest.get(entry.page_id) != entry.last_rev_id
                with self._cond:
                    if entry.cancelled:
                        continue
                    if moved:
                        if self._by_key.get(entry.key) is entry:
                            del self._by_key[entry.key]
                    else:
                        retry = entry.interval_s if latest is not None else self.min_s
                        entry.due = self._clock() + retry
                        heapq.heappush(self._heap, entry)
                if moved:
                    woken += 1
                    entry.wake()
        return woken

    def _ensure_thread(self) -> None:
        with self._cond:
            self._thread = running(self._thread, self._stop, self._run, f"revisit-{self.client.host}")

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                live = [e for e in self._heap if not e.cancelled]
                timeout = (min(e.due for e in live) - self._clock()) if live else None
                if timeout is None or timeout > 0:
                    self._cond.wait(timeout=min(timeout, 60.0) if timeout is not None else 60.0)
            if not self._stop.is_set():
                self.check_due()

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._heap.clear()
            self._by_key.clear()
            self._cond.notify_all()
