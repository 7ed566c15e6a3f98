"""A scheduler's takeover in stages (blackwidow.takeover): which nodes a tick takes over, and when it ends."""
import pytest

from blackwidow import takeover
from blackwidow.store.coordination import AssignmentView
from blackwidow.takeover import Takeover

HOLDINGS = {"A": {"a1", "a2", "a3"}, "B": {"b1"}, "C": {"c1", "c2"}, "D": set()}


@pytest.mark.parametrize("live, step, expect", [
    ({"A", "B", "C", "D"}, 0, None),                        # 0: one whole tick, as before takeovers
    ({"A", "B", "C", "D"}, 6, None),                        # every assigned id fits in one step
    ({"A", "B", "C", "D"}, 5, Takeover(frozenset("ABCD"))),
    ({"B", "C"}, 2, Takeover(frozenset("BC"))),             # the live nodes' ids alone count
    ({"B", "C"}, 3, None),
    (set(), 1, None),
])
def test_a_takeover_begins_when_the_assigned_ids_do_not_fit_in_one_step(live, step, expect):
    assert takeover.begin(live, HOLDINGS, step) == expect


@pytest.mark.parametrize("pending, live, step, expect", [
    ("ABCD", "ABCD", 4, "AB"),        # in id order until the step: A (3) and B (1)
    ("ABCD", "ABCD", 3, "A"),
    ("ABCD", "ABCD", 2, "A"),         # at least one node, however many it holds
    ("ABCD", "ABCD", 100, "ABCD"),
    ("BCD", "ABCD", 3, "BCD"),        # D holds nothing: it rides along
    ("ABCD", "BCD", 3, "BCD"),        # a node gone meanwhile is not taken
    ("CD", "ABCD", 1, "C"),
    ("A", "BCD", 5, ""),              # nothing pending is live any more
])
def test_a_tick_takes_the_next_pending_nodes_in_id_order_up_to_the_step(pending, live, step, expect):
    got = takeover.group(Takeover(frozenset(pending)), frozenset(live), HOLDINGS, step)
    assert got == frozenset(expect)


@pytest.mark.parametrize("pending, taken, live, expect", [
    ("ABCD", "AB", "ABCD", Takeover(frozenset("CD"))),
    ("ABCD", "AB", "ABC", Takeover(frozenset("C"))),        # a pending node gone needs no taking
    ("CD", "CD", "ABCD", None),                              # all taken: the takeover is over
    ("CD", "", "AB", None),
    ("ABCD", "", "ABCDE", Takeover(frozenset("ABCD"))),    # a node that joined is never pending
])
def test_a_takeover_ends_once_every_pending_live_node_was_taken(pending, taken, live, expect):
    assert takeover.after(Takeover(frozenset(pending)), frozenset(taken), frozenset(live)) == expect


def test_the_unheld_ids_are_those_no_live_node_is_assigned():
    assignments = {"s2": AssignmentView("A", True, None), "s3": AssignmentView("Z", True, None)}
    assert takeover.unheld(["s1", "s2", "s3"], assignments, {"A", "B"}) == frozenset({"s1", "s3"})   # Z is gone
    assert takeover.unheld(["s1", "s2", "s3"], assignments, {"A", "Z"}) == frozenset({"s1"})
    assert takeover.unheld([], assignments, {"A"}) == frozenset()


def test_a_node_taken_counts_as_a_whole_report_whatever_it_sent():
    changed = {"A": frozenset({"a1"}), "B": None, "C": frozenset()}
    assert takeover.whole(changed, {"C"}) == {"A": frozenset({"a1"}), "B": None, "C": None}
    assert takeover.whole(changed, set()) == changed
    assert takeover.whole({}, {"D"}) == {"D": None}


ASSIGNED = {sid: AssignmentView(node, True, None) for node, ids in HOLDINGS.items() for sid in ids}


@pytest.mark.parametrize("name, current, carry, leased, expect", [
    ("no carry: the tick starts one and takes no node", None, None, False,
     takeover.Stage(Takeover(frozenset("ABCD")), frozenset(), frozenset("ABCD"), frozenset({"new"}))),
    ("a quota makes every tick whole: none starts", None, None, True, takeover.Stage(None)),
    ("a carry: a steady tick", None, frozenset({"x"}), False, takeover.Stage(None)),
    ("under way: the next group", Takeover(frozenset("ACD")), frozenset(), False,
     takeover.Stage(Takeover(frozenset("ACD")), frozenset("A"), frozenset("CD"))),
])
def test_a_tick_with_no_carry_starts_a_takeover_and_later_ticks_take_its_groups(
        name, current, carry, leased, expect):
    got = takeover.stage(current, carry, leased, frozenset("ABCD"), HOLDINGS, ASSIGNED, [*ASSIGNED, "new"], 3)
    assert got == expect, name
