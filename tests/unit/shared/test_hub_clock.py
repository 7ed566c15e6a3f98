import math

import pytest

from shared import hub_clock
from shared.hub_clock import is_open, until_close, until_open

# the hub window [100, 160) read on a node's clock with a skew allowance of 0.5 s: open in [100.5, 159.5)
CASES = [
    # now,   open,  until_open, until_close
    (99.0, False, 1.5, 0.0),
    (100.49, False, 0.01, 0.0),
    (100.5, True, 0.0, 59.0),
    (130.0, True, 0.0, 29.5),
    (159.49, True, 0.0, 0.01),
    (159.5, False, math.inf, 0.0),
    (170.0, False, math.inf, 0.0),
]


@pytest.mark.parametrize("now, open_, opens_in, closes_in", CASES)
def test_a_window_is_shrunk_by_the_skew_at_both_ends(now, open_, opens_in, closes_in):
    assert is_open(100.0, 160.0, now, 0.5) is open_
    assert until_open(100.0, 160.0, now, 0.5) == pytest.approx(opens_in)
    assert until_close(100.0, 160.0, now, 0.5) == pytest.approx(closes_in)


def test_a_window_shorter_than_twice_the_skew_never_opens():
    assert not any(is_open(100.0, 100.8, t, 0.5) for t in (100.0, 100.4, 100.5, 100.79))
    assert until_open(100.0, 100.8, 99.0, 0.5) == math.inf


def test_two_holders_meeting_at_a_boundary_never_overlap_whatever_their_clocks_within_the_skew():
    # node A holds [100, 160), node B [161, 220) (the hub's 2 x skew handover). True hub time h;
    # A's clock reads h + 0.5, B's h - 0.5: the worst case pair.
    for tenth in range(15_900, 16_200):
        h = tenth / 100
        assert not (is_open(100.0, 160.0, h + 0.5, 0.5) and is_open(161.0, 220.0, h - 0.5, 0.5))
        assert not (is_open(100.0, 160.0, h - 0.5, 0.5) and is_open(161.0, 220.0, h + 0.5, 0.5))


@pytest.mark.parametrize("ttl, expires_at, now, skew, seconds", [
    (15.0, None, 100.0, 0.5, 15.0),        # no deadline sent (an older hub): the ttl alone
    (15.0, 115.0, 100.0, 0.5, 14.5),       # on time: the deadline, read skew early, binds
    (15.0, 130.0, 100.0, 0.5, 15.0),       # a deadline beyond the ttl never lengthens it
    (15.0, 115.0, 112.0, 0.5, 2.5),        # the poll arrived 12 s late: 2.5 s left, not 15
    (15.0, 115.0, 120.0, 0.5, 0.0),        # arrived after its deadline: never valid
])
def test_a_quota_lease_lasts_its_ttl_cut_to_its_deadline(ttl, expires_at, now, skew, seconds):
    assert hub_clock.lease_seconds(ttl, expires_at, now, skew) == seconds
