"""Ending a request in flight when its budget window ends, and not before.

A request under an identity budget must be over when the node's hold on its slot ends. The hub plans a
renewal only two polls before a hold ends, so the end known when a request starts is often close; a
request cut there would be sent again (it spent the identity's budget for nothing) and a wiki that never
answers would only ever be seen as windows closing, never as a timeout. So the request keeps the full
read timeout, and a timer at the window's end asks for the end again: it waits on when the hold was
renewed meanwhile, else it shuts the request's socket, which the connection class hands over through
attach() in the sending thread.
"""
import socket
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

_current = threading.local()


class Watch:
    """One request's socket and whether its window ended while it was in flight. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._over = False
        self.cut = False

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            if self._over:
                return
            self._sock = sock
            if self.cut:
                _shut(sock)

    def end(self) -> None:
        """The window ended: shut the socket now, or as soon as it is attached."""
        with self._lock:
            if self._over:
                return
            self.cut = True
            if self._sock is not None:
                _shut(self._sock)

    def close(self) -> None:
        """The request is over: its (pooled, reusable) socket is no longer this watch's to shut."""
        with self._lock:
            self._over = True
            self._sock = None


@contextmanager
def watched() -> Iterator[Watch]:
    """A Watch for the request this thread sends inside the block."""
    watch = Watch()
    _current.watch = watch
    try:
        yield watch
    finally:
        _current.watch = None
        watch.close()


def attach(sock: socket.socket | None) -> None:
    """Called by the connection in the sending thread once its socket is open."""
    watch = getattr(_current, "watch", None)
    if watch is not None and sock is not None:
        watch.attach(sock)


class WindowEnd:
    """Calls `on_end` at local time `deadline`, unless `extended(deadline)` has moved the end later by
    then: it then waits for the new end, and so on."""

    def __init__(self, deadline: float, clock: Callable[[], float], extended: Callable[[float], float],
                 on_end: Callable[[], None]):
        self._deadline = deadline
        self._clock = clock
        self._extended = extended
        self._on_end = on_end
        self._lock = threading.Lock()
        self._stopped = False
        self._timer: threading.Timer | None = None

    def __enter__(self) -> "WindowEnd":
        with self._lock:
            self._arm()
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()

    def _arm(self) -> None:
        self._timer = threading.Timer(max(0.0, self._deadline - self._clock()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        # under the lock: once __exit__ returned, nothing shuts a socket the pool may have handed on
        with self._lock:
            if self._stopped:
                return
            later = self._extended(self._deadline)
            if later > self._deadline:
                self._deadline = later
                self._arm()
                return
            self._on_end()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
