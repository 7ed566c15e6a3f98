"""Pausing Python's cyclic garbage collector for the length of a poll tick.

A tick allocates a few objects per subscription and frees nearly all of them by reference counting
when it returns. With 100,000 subscriptions the cyclic collector would meanwhile traverse the growing
heap several times per tick, about a sixth of the tick's time (bench/hub_scale.py). Garbage in
cycles made during the tick is collected after it, when the collector runs again.
"""
import functools
import gc


def without_cyclic_gc(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return wrapper
