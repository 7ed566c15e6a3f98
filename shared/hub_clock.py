"""Hub-clock windows read on a node's own wall clock. Pure: no clock is read here.

The hub plans slot windows in its wall-clock time; a node's clock may be off by up to
BW_MAX_CLOCK_SKEW_S either way, so a node treats a window [start, end) as open only in
[start + skew, end - skew) of its own clock. Two nodes whose windows for one slot meet at a
boundary then never hold it at the same instant, whatever their clocks (within the skew) say.
"""
import math


def local_span(start: float, end: float, skew: float) -> tuple[float, float]:
    """The window shrunk by `skew` at both ends; empty (start >= end) when shorter than 2 * skew."""
    return start + skew, end - skew


def is_open(start: float, end: float, now: float, skew: float) -> bool:
    """Whether a node whose wall clock reads `now` may act under the hub window [start, end)."""
    lo, hi = local_span(start, end, skew)
    return lo <= now < hi


def until_open(start: float, end: float, now: float, skew: float) -> float:
    """Seconds until the window opens on this node: 0 while open, inf once it closed (or is empty)."""
    lo, hi = local_span(start, end, skew)
    if now >= hi or lo >= hi:
        return math.inf
    return max(0.0, lo - now)


def until_close(start: float, end: float, now: float, skew: float) -> float:
    """Seconds this node may still act under the window: 0 when it is not open now."""
    lo, hi = local_span(start, end, skew)
    return hi - now if lo <= now < hi else 0.0


def lease_seconds(ttl_s: float, expires_at: float | None, now: float, skew: float) -> float:
    """How long a quota lease received now stays valid on this node: its ttl, cut to its absolute deadline in
    hub time (read `skew` early on this node's wall clock `now`), so that a late poll never extends it."""
    if expires_at is None:
        return ttl_s
    return max(0.0, min(ttl_s, expires_at - skew - now))
