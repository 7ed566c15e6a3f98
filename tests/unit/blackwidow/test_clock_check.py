"""The hub's reading of a node's clock (blackwidow.upstream.clock_check): an interval from one poll's round
trip, the least uncertain of a poll's requests, and a node left out only when certainly beyond the bound."""
import pytest

from blackwidow.upstream.clock_check import ClockReading, certainly_off, narrowest, reading, reference, trusted


@pytest.mark.parametrize("sent, answered, clock, low, high", [
    (100.0, 100.02, 100.01, -0.01, 0.01),      # in step: the round trip is the whole uncertainty
    (100.0, 100.02, 102.01, 1.99, 2.01),       # 2 s ahead
    (100.0, 100.5, 99.0, -1.5, -1.0),          # behind, over a slow poll: a wide interval
    (100.0, 100.0, 100.3, 0.3, 0.3),           # no measurable round trip
])
def test_a_reading_is_the_interval_the_round_trip_leaves(sent, answered, clock, low, high):
    r = reading(sent, answered, clock)
    assert (r.low, r.high) == (pytest.approx(low), pytest.approx(high))
    assert r.offset_s == pytest.approx((low + high) / 2) and r.error_s == pytest.approx((high - low) / 2)


def test_a_hub_clock_that_stepped_back_during_the_poll_gives_no_reading():
    assert reading(100.0, 99.5, 100.2) is None


def test_of_one_polls_requests_the_shortest_round_trip_counts():
    wide, tight = ClockReading(-0.4, 0.6), ClockReading(0.05, 0.07)
    assert narrowest([wide, None, tight]) == tight
    assert narrowest([None]) is None and narrowest([]) is None


@pytest.mark.parametrize("low, high, off", [
    (-0.01, 0.01, False),
    (0.09, 0.11, False),     # might be within 0.1: no evidence enough to take a node out
    (0.11, 0.13, True),      # certainly ahead by more than the bound
    (-0.3, -0.2, True),      # certainly behind
    (-0.5, 0.5, False),      # a slow poll says nothing
])
def test_a_node_is_off_only_when_its_whole_interval_lies_beyond_the_bound(low, high, off):
    assert certainly_off(ClockReading(low, high), 0.1) is off


def test_nodes_without_a_reading_are_trusted_and_the_others_by_their_reading():
    clocks = {"a": ClockReading(1.9, 2.1), "b": ClockReading(-0.01, 0.01)}
    assert trusted(frozenset({"a", "b", "c"}), clocks, 0.1) == {"b", "c"}
    assert certainly_off(None, 0.1) is False


def _at(offset: float) -> ClockReading:
    return ClockReading(offset - 0.005, offset + 0.005)


@pytest.mark.parametrize("why, offsets, ref, left_out", [
    ("all in step", {"a": 0.0, "b": 0.01, "c": -0.01}, 0.0, set()),
    ("one node 2 s ahead", {"a": 0.0, "b": 0.01, "c": 2.0}, 0.005, {"c"}),
    # windows are read on the nodes' clocks: a hub that drifted from all of them stops nobody
    ("the hub 1 s ahead of every node", {"a": -1.0, "b": -1.01, "c": -0.99}, -0.995, set()),
    ("two nodes that disagree: the hub votes", {"a": 0.0, "b": 2.0}, 0.0, {"b"}),
    ("one node alone, off from the hub", {"a": 2.0}, 1.0, {"a"}),
])
def test_nodes_are_judged_against_the_median_of_the_hub_and_every_node(why, offsets, ref, left_out):
    clocks = {n: _at(o) for n, o in offsets.items()}
    assert reference(c.offset_s for c in clocks.values()) == pytest.approx(ref)
    assert frozenset(offsets) - trusted(frozenset(offsets), clocks, 0.1) == left_out
