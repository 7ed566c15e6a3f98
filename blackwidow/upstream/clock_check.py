"""A node's wall clock against the hub's, read from its polls. Pure: no clock is read here.

Upstream budget windows are absolute hub times, and a node reads them on its own wall clock shrunk by
BW_MAX_CLOCK_SKEW_S at both ends (shared.hub_clock); the wiki's limits hold only while every node's clock is
that close to a time they share. So the hub checks it: a node's status report says what its wall clock read while
it built the report, and the hub read its own just before sending the poll and just after the answer came
back. The node's offset (its clock less the hub's) therefore lies in [clock - answered, clock - sent], NTP's
reasoning with the round trip as the uncertainty. What keeps two nodes' windows apart is that their clocks
agree, not that they agree with the hub's (windows are absolute times each node reads on its own clock), so a
node is judged against the deployment's consensus: the median of the hub's own offset (0) and every node's
estimate. A node whose offset is certainly beyond the bound from it gets no new slot holds
(blackwidow.upstream.tick); one whose reading only might be (a slow poll) keeps its turns, so a busy network
does not take nodes out of the budget, and a hub whose own clock drifted from all of its nodes stops nobody.
"""
import statistics
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


def reading(sent: float, answered: float, clock: float) -> ClockReading | None:
    """`sent`, `answered`: the hub's wall clock before the poll and after its answer; `clock`: the node's
    wall clock while it answered. None when the hub's clock stepped back meanwhile: no bound is known."""
    if answered < sent:
        return None
    return ClockReading(clock - answered, clock - sent)


def narrowest(readings: Iterable[ClockReading | None]) -> ClockReading | None:
    """Of one poll's requests, the reading with the shortest round trip: the least uncertain."""
    return min((r for r in readings if r is not None), key=lambda r: r.high - r.low, default=None)


def reference(offsets: Iterable[float]) -> float:
    """The offset nodes are judged against: the median of the hub's own (0) and the nodes' estimates. The hub
    votes, so that of two nodes that disagree the one that also disagrees with the hub is the odd one out."""
    return statistics.median([0.0, *offsets])


def certainly_off(r: ClockReading | None, skew_s: float, reference_s: float = 0.0) -> bool:
    """Whether the node's clock is beyond `skew_s` of `reference_s` whatever the round trip hid. No reading (a
    spawn that does not say its clock) is no evidence."""
    return r is not None and (r.low - reference_s > skew_s or r.high - reference_s < -skew_s)


def trusted(live: Iterable[str], clocks: Mapping[str, ClockReading], skew_s: float) -> frozenset[str]:
    """The live nodes whose clocks the budget may rely on: every one not certainly off the consensus of the
    live nodes' readings."""
    nodes = list(live)
    ref = reference(clocks[n].offset_s for n in nodes if n in clocks)
    return frozenset(n for n in nodes if not certainly_off(clocks.get(n), skew_s, ref))
