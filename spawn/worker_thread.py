"""A per-wiki worker's thread (the revisit batcher, the nudge fetcher), started on first use and again after
it stopped."""
import threading
from typing import Callable


def running(thread: threading.Thread | None, stop: threading.Event, target: Callable[[], None],
            name: str) -> threading.Thread:
    """`thread` while it runs; else `stop` cleared and a new daemon thread running `target`. Call it under the
    worker's lock, so that two callers never start two threads."""
    if thread is not None and thread.is_alive():
        return thread
    stop.clear()
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread
