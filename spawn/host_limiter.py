"""Politeness towards wiki hosts: requests to one host are serial within this process and spaced
by a minimum delay; a host told to back off (maxlag, 429, 5xx) pauses for every caller at once.

Clock and sleep are injected so tests run instantly. No HTTP here.
"""
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable


class Cancelled(Exception):
    """The caller's cancel event was set while waiting for a host slot or a backoff."""


def wait(seconds: float, cancel: threading.Event | None, sleep=time.sleep) -> None:
    """Sleep, returning early with Cancelled if `cancel` is set (detach and stop must be prompt)."""
    if seconds <= 0:
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        return
    if cancel is None:
        sleep(seconds)
    elif cancel.wait(seconds):
        raise Cancelled()


@dataclass
class Backoff:
    """Exponential backoff with jitter, bounded; a server's Retry-After is a floor, capped at max_retry_after."""
    base_s: float = 1.0
    cap_s: float = 60.0
    max_retry_after_s: float = 300.0
    rand: Callable[[], float] = field(default=random.random)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        exp = min(self.cap_s, self.base_s * (2 ** attempt))
        d = exp * (0.5 + self.rand() / 2)          # "equal jitter": never below half the step
        if retry_after is not None:
            d = max(d, min(float(retry_after), self.max_retry_after_s))
        return d


class _Host:
    def __init__(self):
        self.lock = threading.Lock()
        self.next_at = 0.0


class HostLimiter:
    """One lock per host. `slot(host)` holds it for one request and enforces the spacing."""

    def __init__(self, delay_s: float, *, clock=time.monotonic, sleep=time.sleep):
        self.delay_s = delay_s
        self._clock = clock
        self._sleep = sleep
        self._hosts: dict[str, _Host] = {}
        self._guard = threading.Lock()

    def _host(self, host: str) -> _Host:
        with self._guard:
            return self._hosts.setdefault(host, _Host())

    @contextmanager
    def slot(self, host: str, cancel: threading.Event | None = None):
        h = self._host(host)
        while not h.lock.acquire(timeout=0.2):
            if cancel is not None and cancel.is_set():
                raise Cancelled()
        try:
            wait(h.next_at - self._clock(), cancel, self._sleep)
            try:
                yield
            finally:
                h.next_at = max(h.next_at, self._clock() + self.delay_s)
        finally:
            h.lock.release()

    def pause(self, host: str, seconds: float) -> None:
        """Nobody in this process talks to `host` for `seconds` from now."""
        h = self._host(host)
        h.next_at = max(h.next_at, self._clock() + seconds)
