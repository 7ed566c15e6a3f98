"""A node's wall clock against the hub's, read from its polls. Pure: no clock is read here.

Upstream budget windows are absolute hub times, and a node reads them on its own wall clock shrunk by
BW_MAX_CLOCK_SKEW_S at both ends (shared.hub_clock); the wiki's limits hold only while every node's clock is
that close to the hub's. So the hub checks it: a node's status report says what its wall clock read while
it built the report, and the hub read its own just before sending the poll and just after the answer came
back. The node's offset (its clock less the hub's) therefore lies in [clock - answered, clock - sent], NTP's
reasoning with the round trip as the uncertainty. A node whose offset is certainly beyond the bound gets no
new slot holds (blackwidow.upstream.tick); one whose reading only might be beyond it (a slow poll) keeps its
turn, so a busy network does not take nodes out of the budget.
"""
from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True)
class ClockReading:
    low: float      # the node's clock less the hub's, at least (seconds)
    high: float     # at most

    @property
    def offset_s(self) -> float:
        """The best single estimate: the middle of the interval."""
        return (self.low + self.high) / 2

    @property
    def error_s(self) -> float:
        """How far the true offset may be from offset_s: half the poll's round trip."""
        return (self.high - self.low) / 2


def reading(sent: float, answered: float, clock: float) -> ClockReading:
    """`sent`, `answered`: the hub's wall clock before the poll and after its answer; `clock`: the node's
    wall clock while it answered."""
    return ClockReading(clock - max(answered, sent), clock - sent)


def narrowest(readings: Iterable[ClockReading | None]) -> ClockReading | None:
    """Of one poll's requests, the reading with the shortest round trip: the least uncertain."""
    return min((r for r in readings if r is not None), key=lambda r: r.high - r.low, default=None)


def certainly_off(r: ClockReading | None, skew_s: float) -> bool:
    """Whether the node's clock is beyond `skew_s` of the hub's whatever the round trip hid. No reading (a
    spawn that does not say its clock) is no evidence."""
    return r is not None and (r.low > skew_s or r.high < -skew_s)


def trusted(live: Iterable[str], clocks: Mapping[str, ClockReading], skew_s: float) -> frozenset[str]:
    """The live nodes whose clocks the budget may rely on: every one not certainly off."""
    return frozenset(n for n in live if not certainly_off(clocks.get(n), skew_s))
