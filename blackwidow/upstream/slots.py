"""Slot holds: the rows of identity_windows as values, the windows a node is sent, and the safety rule.
Pure: no I/O, no clock.

A hold is one slot of an identity held by one node over [start, end) in hub epoch seconds. The rule that
keeps the sum over nodes within the wiki's limits (docs/upstream.md): holds of one slot never overlap,
and holds of different nodes on one slot are at least `handover_s` apart, except a hold that starts where
another node gave its hold back (`after_give_back`); slots are numbered below `in_flight`; the rates of the
holds covering any instant add up to at most R.
"""
from dataclasses import dataclass
from typing import Collection, Iterable, Sequence

from shared.wire import Window

EPS = 1e-6


@dataclass(frozen=True)
class Hold:
    slot: int
    node: str
    start: float
    end: float
    rate_per_s: float
    gen: int = 0
    # planned in the same allocation that cut the slot's previous hold where its node gave it back: that node
    # had nothing in flight and said so before the hub's clock read this start, so the handover gap (which
    # absorbs two clocks' disagreement about a boundary) has nothing to absorb. Stored with the hold
    # (identity_windows.after_give_back), so the rule stays checkable over every hold written.
    after_give_back: bool = False

    def overlap(self, lo: float, hi: float) -> float:
        """Seconds of this hold within [lo, hi)."""
        return max(0.0, min(self.end, hi) - max(self.start, lo))


def held_seconds(holds: Iterable[Hold], lo: float, hi: float) -> dict[str, float]:
    """{node: slot-seconds its holds cover within [lo, hi)}: where an identity's requests were sent from lately."""
    out: dict[str, float] = {}
    for h in holds:
        if h.overlap(lo, hi) > 0:
            out[h.node] = out.get(h.node, 0.0) + h.overlap(lo, hi)
    return out


def node_windows(holds: Iterable[Hold], node: str, now: float, limit: int = 2) -> tuple[Window, ...]:
    """The first `limit` windows of `node` not ended at `now`: the pieces over which the number of slots it
    holds (and their rate) is constant, adjacent equal pieces merged. A window never claims more than the
    holds give at every instant of it, so a node that acts on it stays within its holds."""
    mine = [h for h in holds if h.node == node and h.end > now]
    points = sorted({t for h in mine for t in (h.start, h.end)})
    pieces: list[Window] = []
    for lo, hi in zip(points, points[1:]):
        if hi <= now:
            continue
        covering = [h for h in mine if h.start <= lo and h.end >= hi]
        if not covering:
            continue
        slots, rate = len(covering), sum(h.rate_per_s for h in covering)
        last = pieces[-1] if pieces else None
        if last is not None and last.end == lo and last.slots == slots and abs(last.rate_per_s - rate) < EPS:
            pieces[-1] = Window(last.start, hi, slots, last.rate_per_s)
        else:
            pieces.append(Window(lo, hi, slots, rate))
    return tuple(pieces[:limit])


def violations(holds: Sequence[Hold], in_flight: int, rate: float, handover_s: float) -> list[str]:
    """What breaks the safety rule among these holds (empty: safe). Used by tests and as a last check."""
    out = []
    by_slot: dict[int, list[Hold]] = {}
    for h in holds:
        if not 0 <= h.slot < in_flight:
            out.append(f"slot {h.slot} of {h.node} outside 0..{in_flight - 1}")
        if h.end <= h.start:
            out.append(f"empty hold {h}")
        by_slot.setdefault(h.slot, []).append(h)
    for slot, rows in by_slot.items():
        rows.sort(key=lambda h: h.start)
        for a, b in zip(rows, rows[1:]):
            gap = 0.0 if a.node == b.node or b.after_give_back else handover_s
            if b.start < a.end + gap - EPS:
                out.append(f"slot {slot}: {b.node} at {b.start} within {gap} s of {a.node} until {a.end}")
    points = sorted({h.start for h in holds})
    for t in points:
        total = sum(h.rate_per_s for h in holds if h.start <= t < h.end)
        if total > rate + EPS:
            out.append(f"rates add up to {total:.3f} > {rate:.3f} at {t}")
    return out


def edge_violations(windows: Iterable[tuple[str, Window]], in_flight: int, rate: float,
                    handover_s: float, exact: Collection[float] = ()) -> list[str]:
    """The same rule seen from the wiki's edge, over the windows nodes were actually sent. Each window is
    widened by half the handover gap at both ends (a new leader's clock may differ from the old one's),
    except at the instants in `exact`: where a node gave its windows back (it had stopped before it said so)
    and where a hold after that give-back starts (read on the clock of the one leader that made the cut);
    a node holds at any instant the most slots of its windows covering it (its own windows follow each
    other); summed over nodes that is at most `in_flight`, and the rates started at most R."""
    def widened(w: Window) -> tuple[float, float]:
        return (w.start if w.start in exact else w.start - handover_s / 2,
                w.end if w.end in exact else w.end + handover_s / 2)
    spans = [(node, *widened(w), w) for node, w in windows]
    out = []
    for t in sorted({lo + EPS for _, lo, _, _ in spans} | {w.start + EPS for _, _, _, w in spans}):
        held: dict[str, int] = {}
        for node, lo, hi, w in spans:
            if lo <= t < hi:
                held[node] = max(held.get(node, 0), w.slots)
        if sum(held.values()) > in_flight:
            out.append(f"{sum(held.values())} slots in flight at {t:.3f} > {in_flight}: {held}")
        started: dict[str, float] = {}
        for node, _, _, w in spans:
            if w.start <= t < w.end:
                started[node] = max(started.get(node, 0.0), w.rate_per_s)
        if sum(started.values()) > rate + EPS:
            out.append(f"rates add up to {sum(started.values()):.3f} at {t:.3f} > {rate:.3f}")
    return out
