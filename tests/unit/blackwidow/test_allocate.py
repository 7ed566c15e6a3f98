"""blackwidow.upstream.allocate: one identity's slots handed out to nodes as windows, rule by rule."""
from dataclasses import replace

import pytest

from blackwidow.upstream.allocate import (Demand, IdentityState, Params, allocate, backfill_due, backfill_turn,
                                          give_back_asks, pause_jitter, released, tenant_shares)
from blackwidow.upstream.limits import Limits, binding_rate, default_limits
from blackwidow.upstream.slots import Hold, node_windows, violations
from shared.wire import Window

P = Params()
HOST = "en.wikipedia.org"
ANON = default_limits(HOST)                       # 1 in flight, R = 200/60 x 0.98
AUTH = default_limits(HOST, "bot")                # 3 in flight
R = binding_rate(ANON)
NOW = 10_000.0
BACKFILL = Demand(backfill={"t1": 4})


def state(holds=(), limits=ANON, gen=7, paused_until=None) -> IdentityState:
    return IdentityState(HOST, limits, gen, paused_until, tuple(holds))


def test_defaults_follow_the_robot_policy_and_the_api_limits():
    assert (ANON.in_flight, ANON.per_s, ANON.per_min) == (1, 5.0, 200)
    assert (AUTH.in_flight, AUTH.per_s, AUTH.per_min, AUTH.credential) == (3, 10.0, 2000, "bot")
    assert default_limits("127.0.0.1:8790", "bot") == Limits(1, 5.0, 200, credential="bot")   # anonymous numbers
    assert default_limits("www.wikidata.org").per_min == 200
    assert R == pytest.approx(200 / 60 * 0.98)                      # a count per minute: a 2 % margin
    assert binding_rate(Limits(1, 5.0, None)) == pytest.approx(4.75)  # "under 5 req/s": a 5 % margin
    assert binding_rate(AUTH) == pytest.approx(10 * 0.95)
    assert binding_rate(Limits(3, 10.0, 600)) == pytest.approx(9.5)  # the tighter of the two binds


def test_a_free_identity_goes_to_the_node_with_demand_at_once():
    plan = allocate(state(), {"a": BACKFILL}, {}, NOW, P)
    assert plan.writes == (Hold(0, "a", NOW, NOW + P.window_s, R, 8),)
    budget = plan.budgets["a"]
    assert (budget.gen, budget.wiki_host, budget.credential) == (8, HOST, None)
    assert budget.windows == (Window(NOW, NOW + P.window_s, 1, R),)
    assert (budget.slow_after_s, budget.slow_wait_s, budget.maxlag, budget.paused_until) == (1.0, 5.0, 5, None)
    assert budget.weights == {"t1": 1.0}


def test_a_node_without_demand_gets_nothing():
    plan = allocate(state(), {"a": Demand(), "b": Demand(backfill={"t1": 0})}, {}, NOW, P)
    assert plan.writes == ()
    assert plan.budgets["a"].windows == () and plan.budgets["b"].windows == ()
    assert plan.targets == {}


def test_the_holder_keeps_its_slot_by_an_extension_without_a_gap():
    held = Hold(0, "a", NOW - 12, NOW + 3, R, 7)
    plan = allocate(state([held]), {"a": BACKFILL}, {}, NOW, P)
    assert plan.writes == (Hold(0, "a", NOW - 12, NOW + 3 + P.window_s, R, 8),)
    assert plan.budgets["a"].windows == (Window(NOW - 12, NOW + 3 + P.window_s, 1, R),)


def test_nothing_is_planned_while_the_current_hold_ends_beyond_the_horizon():
    held = Hold(0, "a", NOW - 2, NOW + P.horizon_s + 1, R, 7)
    plan = allocate(state([held]), {"a": BACKFILL, "b": BACKFILL}, {}, NOW, P)
    assert plan.writes == ()
    assert plan.budgets["a"].windows == (Window(NOW - 2, NOW + P.horizon_s + 1, 1, R),)
    assert plan.budgets["b"].windows == ()


def test_another_node_starts_one_handover_gap_after_the_hold_of_an_earlier_leader():
    """The hold of a node that is gone (no demand reported) still counts until it ends."""
    held = Hold(0, "gone", NOW - 10, NOW + 2, R, 7)
    plan = allocate(state([held]), {"b": BACKFILL}, {}, NOW, P)
    start = NOW + 2 + P.handover_s
    assert plan.writes == (Hold(0, "b", start, start + P.window_s, R, 8),)
    assert plan.budgets["gone"].windows == (Window(NOW - 10, NOW + 2, 1, R),)


def test_the_node_below_its_share_takes_over_from_the_holder():
    history = [Hold(0, "a", NOW - 100, NOW + 2, R, 7)]
    plan = allocate(state(history), {"a": BACKFILL, "b": Demand(backfill={"t2": 1})}, {}, NOW, P)
    assert [(h.node, h.start) for h in plan.writes] == [("b", NOW + 2 + P.handover_s)]


@pytest.mark.parametrize("held_s, next_holder", [
    (15.0, "a"),        # 15 s of slot-time ahead of b: within keep_s, a keeps it without a handover gap
    (30.0, "b"),        # 30 s ahead: beyond it, b takes over one gap after a's hold
])
def test_the_holder_keeps_its_slot_while_it_is_within_keep_s_of_the_node_furthest_below_its_share(
        held_s, next_holder):
    history = [Hold(0, "a", NOW + 2 - held_s, NOW + 2, R, 7)]
    plan = allocate(state(history), {"a": BACKFILL, "b": Demand(backfill={"t2": 1})}, {}, NOW, P)
    (hold,) = plan.writes
    assert hold.node == next_holder
    assert hold.start == (NOW + 2 - held_s if next_holder == "a" else NOW + 2 + P.handover_s)


def test_released_holds_end_at_once_and_holds_still_to_come_go():
    running, coming = Hold(0, "a", NOW - 5, NOW + 10, R, 7), Hold(1, "a", NOW + 2, NOW + 17, R, 7)
    newer, other = Hold(2, "a", NOW - 1, NOW + 14, R, 8), Hold(3, "b", NOW - 5, NOW + 10, R, 7)
    ended = Hold(0, "a", NOW - 30, NOW - 10, R, 6)
    holds, cuts, dropped = released([running, coming, newer, other, ended], {
        "a": Demand(released_gen=7), "b": Demand(backfill={"t": 1})}, NOW)
    assert cuts == (Hold(0, "a", NOW - 5, NOW, R, 7),)
    assert dropped == (coming,)
    # a hold written after the gen the node gave back was not in its report: it stays
    assert holds == [cuts[0], newer, other, ended]


def test_a_slot_given_back_goes_to_the_next_node_where_it_was_cut():
    held = Hold(0, "a", NOW - 5, NOW + 10, R, 7)
    plan = allocate(state([held]), {"a": Demand(released_gen=7), "b": BACKFILL}, {}, NOW, P)
    assert plan.cuts == (Hold(0, "a", NOW - 5, NOW, R, 8),)
    # a said it had stopped before the hub read its clock: no handover gap after the cut
    assert [(h.node, h.start, h.after_give_back) for h in plan.writes] == [("b", NOW, True)]
    assert plan.budgets["a"].windows == ()
    assert violations([*plan.cuts, *plan.writes], 1, R, P.handover_s) == []
    # with several slots the plain rule holds: a handover gap after the cut
    wide = replace(state([held]), limits=AUTH)
    plan = allocate(wide, {"a": Demand(released_gen=7), "b": BACKFILL}, {}, NOW, P)
    assert [(h.node, h.start, h.after_give_back) for h in plan.writes if h.slot == 0] == [
        ("b", NOW + P.handover_s, False)]
    # a hold that ended where another leader cut it is followed one handover gap later, as every other is
    cut = Hold(0, "a", NOW - 5, NOW - 0.5, R, 8)
    plan = allocate(state([cut]), {"a": Demand(), "b": BACKFILL}, {}, NOW, P)
    assert [(h.node, h.start, h.after_give_back) for h in plan.writes] == [("b", NOW - 0.5 + P.handover_s, False)]
    # without the give-back, b waits for the end of a's hold
    plan = allocate(state([held]), {"a": Demand(), "b": BACKFILL}, {}, NOW, P)
    assert plan.writes == () and plan.cuts == ()


FRESH = Demand(fresh={"t3": 1})


@pytest.mark.parametrize("holds, demand, asked", [
    # a fresh node with no hold: the holder whose holds run longest is asked
    ([Hold(0, "a", NOW - 5, NOW + 10, R), Hold(1, "b", NOW - 5, NOW + 20, R)],
     {"a": BACKFILL, "b": BACKFILL, "f": FRESH}, {"b"}),
    # two fresh nodes: two holders
    ([Hold(0, "a", NOW - 5, NOW + 10, R), Hold(1, "b", NOW - 5, NOW + 20, R)],
     {"a": BACKFILL, "b": BACKFILL, "f": FRESH, "g": FRESH}, {"a", "b"}),
    # the fresh node holds a slot already, or nobody is fresh: nobody is asked
    ([Hold(0, "a", NOW - 5, NOW + 10, R), Hold(1, "f", NOW - 5, NOW + 2, R)], {"a": BACKFILL, "f": FRESH}, set()),
    ([Hold(0, "a", NOW - 5, NOW + 10, R)], {"a": BACKFILL, "b": BACKFILL}, set()),
    # a holder with freshness demand of its own is asked too (it serves what waits first), after the
    # backfill holders; an ended hold holds nothing
    ([Hold(0, "a", NOW - 5, NOW + 10, R)], {"a": Demand(fresh={"t1": 1}), "f": FRESH}, {"a"}),
    ([Hold(0, "a", NOW - 5, NOW + 30, R), Hold(1, "b", NOW - 5, NOW + 10, R)],
     {"a": Demand(fresh={"t1": 1}), "b": BACKFILL, "f": FRESH}, {"b"}),
    ([Hold(0, "a", NOW - 15, NOW, R)], {"a": BACKFILL, "f": FRESH}, set()),
    # a holder that only reads a feed is asked as soon as any node with demand holds nothing
    ([Hold(0, "r", NOW - 5, NOW + 10, R)], {"r": Demand(following=True), "b": BACKFILL}, {"r"}),
    ([Hold(0, "r", NOW - 5, NOW + 10, R)], {"r": Demand(following=True), "f": FRESH}, {"r"}),
    ([Hold(0, "r", NOW - 5, NOW + 10, R)], {"r": Demand(following=True), "b": Demand()}, set()),
    # a reader whose read waits takes its turn with the fresh nodes, while one has freshness work
    ([Hold(0, "a", NOW - 5, NOW + 10, R)], {"a": FRESH, "r": Demand(backfill={"t1": 1}, following=True)}, {"a"}),
    ([Hold(0, "a", NOW - 5, NOW + 10, R)], {"a": BACKFILL, "r": Demand(backfill={"t1": 1}, following=True)},
     set()),
    # reading a feed with demand of its own: a holder like any other
    ([Hold(0, "r", NOW - 5, NOW + 10, R)], {"r": Demand(backfill={"t1": 1}, following=True), "b": BACKFILL},
     set()),
])
def test_a_holder_is_asked_to_give_its_slot_back_for_each_fresh_node_that_holds_none(holds, demand, asked):
    assert give_back_asks(holds, demand, NOW, P) == asked


def turns_of(*nodes: str, end: float = NOW - 1) -> list[Hold]:
    """One slot's turns, one after the other, in the order given, the last ending at `end`."""
    return [Hold(0, n, end - 3 * (len(nodes) - i), end - 3 * (len(nodes) - i) + 2, R) for i, n in enumerate(nodes)]


TURNS = frozenset({"f", "g"})


@pytest.mark.parametrize("holds, due", [
    (turns_of("f", "g", "f", "g"), True),                # four fresh turns in a row
    (turns_of("b", "f", "g", "f", "g"), True),           # what came before them does not matter
    (turns_of("f", "g", "f"), False),                    # three
    (turns_of("f", "g", "b", "f"), False),               # backfill had a turn among the last four
    (turns_of("f", "g", "f", "b"), False),               # ... the last one
    # an extended hold is one turn, whatever its length
    ([Hold(0, "f", NOW - 40, NOW + 5, R)] + turns_of("g", "f", "g", end=NOW - 41), True),
    ([], False),
    # the turns of every slot count, by when they began
    ([Hold(1, "f", NOW - 2, NOW + 10, R)] + turns_of("g", "f", "g"), True),
    ([Hold(1, "b", NOW - 2, NOW + 10, R)] + turns_of("g", "f", "g"), False),
    # a backfill node that held a slot meanwhile (given back and extended: still its one turn) had its turn
    ([Hold(1, "b", NOW - 30, NOW, R)] + turns_of("f", "g", "f", "g"), False),
    ([Hold(1, "b", NOW - 30, NOW - 13, R)] + turns_of("f", "g", "f", "g"), True),
])
def test_backfill_is_due_after_four_turns_in_a_row_for_nodes_with_freshness_work(holds, due):
    assert backfill_due(holds, TURNS, P) is due


@pytest.mark.parametrize("holds, hold, now, protected", [
    # a turn after four fresh ones, begun a second ago: not asked back
    (turns_of("f", "g", "f", "g"), Hold(0, "b", NOW - 1, NOW + 14, R), NOW, True),
    # ... until backfill_turn_s after its start
    (turns_of("f", "g", "f", "g"), Hold(0, "b", NOW - 1, NOW + 14, R), NOW - 1 + P.backfill_turn_s, False),
    # a backfill node's hold taken by deficit, not as the turn freshness owed it: asked as before
    (turns_of("f", "b", "f", "g"), Hold(0, "b", NOW - 1, NOW + 14, R), NOW, False),
    # a node with freshness work is never in a backfill turn
    (turns_of("f", "g", "f", "g"), Hold(0, "f", NOW - 1, NOW + 14, R), NOW, False),
])
def test_a_backfill_turn_is_kept_from_asks_for_a_poll(holds, hold, now, protected):
    assert backfill_turn(hold, holds + [hold], TURNS, now, P) is protected


def test_a_backfill_turn_is_granted_after_four_fresh_turns_and_not_asked_back_at_once():
    demand = {"f": FRESH, "g": FRESH, "b": BACKFILL}
    fresh_turns = turns_of("f", "g", "f", "g", end=NOW)
    # f just gave its turn back: g and f wait, and b's turn comes first
    plan = allocate(state(fresh_turns), demand, {}, NOW, P)
    (hold,) = plan.writes
    assert hold.node == "b"
    # at the next tick both fresh nodes hold nothing: the asks go round b while its turn lasts
    later = hold.start + 1
    plan = allocate(state(fresh_turns + [hold]), demand, {}, later, P)
    assert not plan.budgets["b"].give_back
    plan = allocate(state(fresh_turns + [hold]), demand, {}, hold.start + P.backfill_turn_s, P)
    assert plan.budgets["b"].give_back


def test_the_ask_rides_on_the_holders_budget_and_the_fresh_node_follows_the_give_back():
    held = Hold(0, "a", NOW - 5, NOW + 10, R, 7)
    plan = allocate(state([held]), {"a": BACKFILL, "f": FRESH}, {}, NOW, P)
    assert plan.budgets["a"].give_back and not plan.budgets["f"].give_back and plan.writes == ()
    later = NOW + 1
    plan = allocate(state([held], gen=8), {"a": Demand(backfill={"t1": 4}, released_gen=8), "f": FRESH}, {},
                    later, P)
    assert plan.cuts == (Hold(0, "a", NOW - 5, later, R, 9),)
    assert [(h.node, h.start) for h in plan.writes] == [("f", later)]      # where a's hold was cut
    assert not plan.budgets["a"].give_back        # the fresh node holds the slot now


def test_fresh_holders_take_turns_at_the_slot():
    # a holds the slot for its freshness work while f waits with its own: a is asked, serves what waited,
    # gives back, and f gets the slot; a, fresh again, waits for f in turn
    held = Hold(0, "a", NOW - 5, NOW + 10, R, 7)
    fresh_a = Demand(fresh={"t1": 1})
    plan = allocate(state([held]), {"a": fresh_a, "f": FRESH}, {}, NOW, P)
    assert plan.budgets["a"].give_back and plan.writes == ()
    later = NOW + 1
    plan = allocate(state([held], gen=8), {"a": Demand(fresh={"t1": 1}, released_gen=8), "f": FRESH}, {}, later, P)
    assert [(h.node, h.start) for h in plan.writes] == [("f", later)]      # where a's hold was cut
    # a waits with freshness work again: f is asked with the same Budget, and serves what waits there first
    assert plan.budgets["f"].windows and plan.budgets["f"].give_back and not plan.budgets["a"].give_back
    # once nobody else waits, the holder is asked for nothing
    holds = [replace(held, end=later), *plan.writes]
    plan = allocate(state(holds, gen=9), {"a": Demand(), "f": FRESH}, {}, later + 1, P)
    assert not plan.budgets["f"].give_back


def test_a_node_that_just_gave_its_turn_back_goes_after_the_others_waiting():
    # a gave back (asked), still has freshness work, and is furthest below its share: f, waiting, goes first
    history = [Hold(0, "f", NOW - 300, NOW - 100, R, 5), Hold(0, "a", NOW - 20, NOW + 10, R, 7)]
    demand = {"a": Demand(fresh={"t1": 2}, released_gen=7), "f": FRESH}
    plan = allocate(state(history), demand, {}, NOW, P)
    assert [(h.node, h.start) for h in plan.writes] == [("f", NOW)]
    # alone, it gets the slot again
    plan = allocate(state(history), {"a": Demand(fresh={"t1": 2}, released_gen=7)}, {}, NOW, P)
    assert [h.node for h in plan.writes] == ["a"]


def test_a_slot_nobody_wants_stays_with_the_feed_reader_until_somebody_does():
    reader = Demand(following=True)
    plan = allocate(state(), {"r": reader, "b": Demand()}, {}, NOW, P)
    assert [(h.node, h.start) for h in plan.writes] == [("r", NOW)]
    held = replace(plan.writes[0], gen=7)
    plan = allocate(state([held]), {"r": reader}, {}, NOW + P.window_s - 1, P)
    assert plan.writes == (replace(held, end=held.end + P.window_s, gen=8),)        # extended, no gap
    # somebody wants it: the reader is asked for it back, and the slot's next hold is not the reader's
    plan = allocate(state([held]), {"r": reader, "b": BACKFILL}, {}, NOW + 1, P)
    assert plan.budgets["r"].give_back and plan.writes == ()
    plan = allocate(state([held]), {"r": reader, "b": BACKFILL}, {}, NOW + P.window_s - 1, P)
    assert [(h.node, h.start) for h in plan.writes] == [("b", held.end + P.handover_s)]
    # a reader holds one slot at most
    plan = allocate(state(limits=AUTH), {"r": reader}, {}, NOW, P)
    assert len(plan.writes) == 1


def test_freshness_demand_goes_first_however_large_the_backfill():
    history = [Hold(0, "b", NOW - 200, NOW - 100, R, 5), Hold(0, "a", NOW - 99, NOW + 2, R, 7)]
    demand = {"a": Demand(backfill={"t1": 10_000}), "b": Demand(backfill={"t2": 10_000}),
              "f": Demand(fresh={"t3": 1})}
    plan = allocate(state(history), demand, {"t1": 100.0, "t2": 100.0}, NOW, P)
    assert [h.node for h in plan.writes] == ["f"]


def test_a_node_holds_no_more_slots_than_it_has_sources_waiting():
    plan = allocate(state(limits=AUTH), {"a": Demand(backfill={"t1": 2})}, {}, NOW, P)
    assert sorted(h.slot for h in plan.writes) == [0, 1]
    assert plan.budgets["a"].windows == (Window(NOW, NOW + P.window_s, 2, 2 * binding_rate(AUTH) / 3),)


def test_slots_are_shared_by_several_nodes_at_once():
    plan = allocate(state(limits=AUTH), {"a": BACKFILL, "b": BACKFILL}, {}, NOW, P)
    held = sorted((h.slot, h.node) for h in plan.writes)
    assert held in ([(0, "a"), (1, "b"), (2, "a")], [(0, "b"), (1, "a"), (2, "b")])
    assert violations(plan.writes, 3, binding_rate(AUTH), P.handover_s) == []


def test_a_pause_is_copied_to_every_node_with_its_own_jitter_and_nothing_starts_before_it():
    until = NOW + 30
    held = Hold(0, "a", NOW - 10, NOW + 2, R, 7)
    plan = allocate(state([held], paused_until=until), {"a": BACKFILL, "b": BACKFILL}, {}, NOW, P)
    for node in ("a", "b"):
        assert plan.budgets[node].paused_until == until + pause_jitter(node, P)
        assert 0 <= pause_jitter(node, P) < P.pause_jitter_s
    assert pause_jitter("a", P) != pause_jitter("b", P)
    (hold,) = plan.writes
    assert hold.start == until + pause_jitter(hold.node, P)
    # a pause that is over is not sent
    assert allocate(state(paused_until=NOW - 1), {"a": BACKFILL}, {}, NOW, P).budgets["a"].paused_until is None


def test_holds_from_higher_limits_run_out_before_anything_new_starts():
    """in_flight lowered from 3 to 1: slots 1 and 2 are still held; slot 0 waits for them."""
    per3 = binding_rate(AUTH) / 3
    holds = [Hold(0, "a", NOW - 5, NOW + 1, per3, 7), Hold(1, "b", NOW - 5, NOW + 3, per3, 7),
             Hold(2, "c", NOW - 5, NOW + 3, per3, 7)]
    plan = allocate(state(holds, limits=ANON), {"a": BACKFILL}, {}, NOW, P)
    assert [(h.slot, h.start) for h in plan.writes] == [(0, NOW + 3 + P.handover_s)]


def test_holds_ended_a_cycle_ago_are_dropped():
    old = Hold(0, "a", NOW - P.cycle_s - 20, NOW - P.cycle_s - 1, R, 3)
    recent = Hold(0, "a", NOW - P.cycle_s, NOW - 1, R, 4)
    assert allocate(state([old, recent]), {}, {}, NOW, P).drops == (old,)


def test_tenant_shares_split_by_weight_then_by_waiting_sources():
    demand = {"a": Demand(backfill={"t1": 3, "t2": 1}), "b": Demand(fresh={"t2": 1}, backfill={"t3": 0})}
    assert tenant_shares(demand, {"t1": 3.0}) == {"a": {"t1": 0.75, "t2": 0.125}, "b": {"t2": 0.125}}


def test_each_budget_weighs_the_nodes_tenants_and_names_the_requests_the_other_nodes_served():
    demand = {"a": Demand(backfill={"t1": 3, "t2": 1}, served={"t1": 10.0, "t2": 2.0}),
              "b": Demand(backfill={"t2": 1}, served={"t2": 5.0})}
    budgets = allocate(state(), demand, {"t1": 3.0}, NOW, P).budgets
    assert budgets["a"].weights == {"t1": 0.75, "t2": 0.25}      # by weight: the queue picks by service
    assert (budgets["a"].served, budgets["b"].served) == ({"t2": 5.0}, {"t1": 10.0, "t2": 2.0})
    assert budgets["a"].cycle_s == P.cycle_s


@pytest.mark.parametrize("served, holders", [
    ({"a": {"t1": 30.0}}, {"b"}),            # t1 was served: the node of t2, which was not, gets the slot
    ({"b": {"t2": 30.0}, "c": {"t1": 1.0}}, {"a", "c"}),
])
def test_a_free_slot_goes_to_a_node_of_the_tenant_furthest_behind(served, holders):
    lanes = {"a": {"t1": 2}, "b": {"t2": 1}, "c": {"t1": 1}}
    demand = {n: Demand(backfill=b, served=served.get(n, {})) for n, b in lanes.items()}
    (hold,) = allocate(state(), demand, {}, NOW, P).writes
    assert hold.node in holders


@pytest.mark.parametrize("holds, windows", [
    ([], ()),
    ([Hold(0, "a", 0, 10, 1.0)], (Window(0, 10, 1, 1.0),)),
    # a slot kept by an extension and a second one for part of it: two pieces, the third sent later
    ([Hold(0, "a", 0, 30, 1.0), Hold(1, "a", 12, 20, 1.0)], (Window(0, 12, 1, 1.0), Window(12, 20, 2, 2.0))),
    # ended pieces are left out; a gap between two holds is two windows
    ([Hold(0, "a", -20, -5, 1.0), Hold(0, "a", 2, 9, 1.0), Hold(0, "b", 10, 20, 1.0)], (Window(2, 9, 1, 1.0),)),
    # adjacent holds on two slots with the same count and rate are one window
    ([Hold(0, "a", 0, 10, 1.0), Hold(1, "a", 10, 20, 1.0)], (Window(0, 20, 1, 1.0),)),
])
def test_node_windows(holds, windows):
    assert node_windows(holds, "a", 1.0) == windows


@pytest.mark.parametrize("holds, broken", [
    ([Hold(0, "a", 0, 10, 1.0), Hold(0, "b", 11, 20, 1.0)], False),
    ([Hold(0, "a", 0, 10, 1.0), Hold(0, "b", 10.5, 20, 1.0)], True),       # handover gap too short
    ([Hold(0, "a", 0, 10, 1.0), Hold(0, "a", 10, 20, 1.0)], False),        # the same node needs no gap
    ([Hold(0, "a", 0, 10, 1.0), Hold(0, "b", 10, 20, 1.0, after_give_back=True)], False),   # after a give-back
    ([Hold(0, "a", 0, 10, 1.0), Hold(0, "b", 9.5, 20, 1.0, after_give_back=True)], True),    # never overlapping
    ([Hold(0, "a", 0, 10, 1.0), Hold(1, "b", 0, 10, 1.0)], True),          # slot 1 of 1
    ([Hold(0, "a", 0, 10, 2.0)], True),                                    # rate above R
])
def test_violations(holds, broken):
    assert bool(violations(holds, 1, 1.5, 1.0)) == broken
