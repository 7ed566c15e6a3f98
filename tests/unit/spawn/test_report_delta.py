"""Reports that carry only what changed (spawn.report_delta, pure): when a delta is allowed, what it holds,
and paging through one issued answer."""
import pytest

from shared.wire import SubscriptionStatus
from spawn import report_delta


def st(sub_id, state="running", revisions=0):
    return SubscriptionStatus(sub_id, state, revisions)


HELD = [st("a"), st("b", revisions=5), st("c")]
LATEST = report_delta.answer(None, None, HELD, "boot.1")


@pytest.mark.parametrize("latest, since, current, delta, ids, removed", [
    # no report issued yet, or a poll naming none: everything
    (None, None, HELD, False, ["a", "b", "c"], []),
    (None, "boot.1", HELD, False, ["a", "b", "c"], []),
    (LATEST, None, HELD, False, ["a", "b", "c"], []),
    # a poll naming an older or unknown report (an answer the hub lost, a hub restart): everything
    (LATEST, "boot.0", HELD, False, ["a", "b", "c"], []),
    (LATEST, "other.1", HELD, False, ["a", "b", "c"], []),
    # naming the latest: nothing changed, nothing to say
    (LATEST, "boot.1", HELD, True, [], []),
    # a counter moved, one subscription added, one dropped
    (LATEST, "boot.1", [st("a"), st("b", revisions=7), st("d")], True, ["b", "d"], ["c"]),
    # a state changed
    (LATEST, "boot.1", [st("a", "failed"), st("b", revisions=5), st("c")], True, ["a"], []),
])
def test_what_a_report_holds(latest, since, current, delta, ids, removed):
    issued = report_delta.answer(latest, since, current, "boot.2")
    assert (issued.token, issued.delta, list(issued.ids), list(issued.removed)) == ("boot.2", delta, ids, removed)
    assert [s.id for s in issued.statuses] == ids
    assert issued.held == {s.id: s for s in current}      # the next delta is measured against all of it


def test_deltas_chain_from_the_latest_report_only():
    second = report_delta.answer(LATEST, "boot.1", [st("a"), st("b", revisions=6)], "boot.2")
    third = report_delta.answer(second, "boot.2", [st("a"), st("b", revisions=6)], "boot.3")
    assert (third.delta, third.ids, third.removed) == (True, (), ())
    # the hub still names boot.1 (it never received boot.2): everything again
    fourth = report_delta.answer(third, "boot.1", [st("a"), st("b", revisions=6)], "boot.4")
    assert (fourth.delta, fourth.ids) == (False, ("a", "b"))


@pytest.mark.parametrize("after, limit, ids, more", [
    (None, 2, ["a", "b"], "b"),
    ("b", 2, ["c", "d"], "d"),
    ("d", 2, ["e"], None),
    ("bb", 2, ["c", "d"], "d"),          # a cursor between ids
    (None, 10, ["a", "b", "c", "d", "e"], None),
    ("e", 2, [], None),
])
def test_pages_of_one_answer(after, limit, ids, more):
    issued = report_delta.answer(None, None, [st(i) for i in "edcba"], "t")
    items, next_after = report_delta.page(issued, after, limit)
    assert ([s.id for s in items], next_after) == (ids, more)
