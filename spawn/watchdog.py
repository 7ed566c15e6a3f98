"""Hub liveness on the spawn side: every hub call touches; silence longer than the timeout detaches.

Disarmed until the first contact (a fresh node has nothing to drop) and again after firing."""
import threading
import time
from typing import Callable


class DetachWatchdog:
    def __init__(self, timeout_s: float, on_detach: Callable[[], None], *, clock=time.monotonic):
        self.timeout_s = timeout_s
        self._on_detach = on_detach
        self._clock = clock
        self._last: float | None = None
        self._lock = threading.Lock()

    def touch(self) -> None:
        with self._lock:
            self._last = self._clock()

    @property
    def armed(self) -> bool:
        return self._last is not None

    def silence_s(self) -> float | None:
        last = self._last
        return None if last is None else self._clock() - last

    def check(self) -> bool:
        """Fire on_detach once if the hub has been silent too long. Returns whether it fired."""
        with self._lock:
            if self._last is None or self._clock() - self._last <= self.timeout_s:
                return False
            self._last = None
        self._on_detach()
        return True

    def run(self, stop: threading.Event, interval_s: float = 0.25) -> None:
        while not stop.wait(interval_s):
            self.check()
