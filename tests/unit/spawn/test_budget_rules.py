import math

import pytest

from shared.wire import Budget, Window
from spawn.budget_rules import (BACKFILL, FEED, FRESH, FRESH_RUN, Local, Ticket, charge, cluster_served, demand,
                                drains, extended, gate, held_until, may_release, passed_over, pick)

SKEW = 0.5
W1 = Window(100.0, 160.0, 1, 2.0)
W2 = Window(160.0, 220.0, 1, 2.0)


def budget(*windows, paused_until=None):
    return Budget(gen=1, wiki_host="h", windows=windows, paused_until=paused_until)


GATES = [
    # name, budget, local, now, granted, wait_s, a part of the reason
    ("no budget", None, Local(), 130.0, False, math.inf, "upstream budget of h"),
    ("no window", budget(), Local(), 130.0, False, math.inf, "upstream budget of h"),
    ("before the window", budget(W1), Local(), 99.0, False, 1.5, "next upstream window"),
    ("inside the skew margin", budget(W1), Local(), 100.2, False, 0.3, "next upstream window"),
    ("open", budget(W1), Local(), 130.0, True, math.inf, None),
    ("too close to the end", budget(W1), Local(), 159.2, False, math.inf, "budget"),
    ("after the window", budget(W1), Local(), 170.0, False, math.inf, "budget"),
    ("slot taken", budget(W1), Local(in_flight=1), 130.0, False, math.inf, "slot(s) of h busy"),
    ("slot cooling after slow", budget(W1), Local(cooling=(133.0,)), 130.0, False, 3.0, "busy"),
    ("cooling over", budget(W1), Local(cooling=(129.0,)), 130.0, True, math.inf, None),
    ("rate: too soon", budget(W1), Local(last_start=129.8), 130.0, False, 0.3, "request rate"),
    ("rate: spaced enough", budget(W1), Local(last_start=129.5), 130.0, True, math.inf, None),
    ("own pause (429)", budget(W1), Local(paused_until=140.0), 130.0, False, 10.0, "paused"),
    ("hub pause, read with skew", budget(W1, paused_until=135.0), Local(), 130.0, False, 5.5, "paused"),
    ("credentials refused", budget(W1), Local(auth_error="Wrong pass"), 130.0, False, math.inf, "Wrong pass"),
]


@pytest.mark.parametrize("name, b, local, now, granted, wait_s, reason", GATES, ids=[g[0] for g in GATES])
def test_gate(name, b, local, now, granted, wait_s, reason):
    g = gate(b, local, now, SKEW, "h")
    assert g.granted is granted
    if granted:
        assert g.deadline == 159.5 and g.slots == 1
    else:
        assert g.wait_s == pytest.approx(wait_s) and reason in g.reason


EXTENDED = [
    # name, budget, deadline granted at the start, where the request must end now
    ("no budget any more", None, 159.5, 159.5),
    ("unchanged", budget(W1), 159.5, 159.5),
    ("the hold renewed in place", budget(Window(100.0, 175.0, 1, 2.0)), 159.5, 174.5),
    ("a following window arrived", budget(W1, W2), 159.5, 219.5),
    ("the next window is another node's (a gap)", budget(W1, Window(161.0, 220.0, 1, 2.0)), 159.5, 159.5),
    ("the hold was given back", budget(), 159.5, 159.5),
    ("a window elsewhere in time", budget(Window(300.0, 360.0, 1, 2.0)), 159.5, 159.5),
]


@pytest.mark.parametrize("name, b, deadline, end", EXTENDED, ids=[e[0] for e in EXTENDED])
def test_extended(name, b, deadline, end):
    assert extended(b, deadline, SKEW) == end


def test_two_slots_let_a_second_request_start_and_not_a_third():
    b = budget(Window(100.0, 160.0, 2, 10.0))
    assert gate(b, Local(in_flight=1, last_start=120.0), 130.0, SKEW, "h").granted
    assert not gate(b, Local(in_flight=2, last_start=120.0), 130.0, SKEW, "h").granted


def test_a_request_may_run_on_through_a_following_window_with_as_many_slots():
    assert held_until((W1, W2), 0, SKEW) == 219.5
    assert held_until((W1, Window(161.0, 220.0, 1, 2.0)), 0, SKEW) == 159.5       # a gap: another node between
    assert held_until((Window(100.0, 160.0, 2, 2.0), W2), 0, SKEW) == 159.5       # fewer slots next
    assert gate(budget(W1, W2), Local(), 159.2, SKEW, "h").deadline == 219.5


def t(seq, lane, *tenants):
    return Ticket(seq, lane, tenants)


PICKS = [
    # waiting,                                          served,               weights,            expected seq
    ([t(1, BACKFILL, "a"), t(2, FRESH, "b")],          {},                   {},                 2),
    ([t(3, FRESH, "a"), t(2, FRESH, "b")],             {},                   {},                 2),
    ([t(1, BACKFILL, "a"), t(2, BACKFILL, "b")],       {"a": 2.0, "b": 1.0}, {},                 2),
    ([t(1, BACKFILL, "a"), t(2, BACKFILL, "b")],       {"a": 2.0, "b": 1.0}, {"a": 3.0},         1),
    ([t(1, BACKFILL, "a"), t(2, BACKFILL, "b", "c")],  {"a": 1.0, "b": 5.0}, {},                 2),
    ([t(1, BACKFILL, "a"), t(2, BACKFILL, "b")],       {},                   {},                 1),
    ([],                                               {},                   {},                 None),
    ([t(1, FRESH, "a"), t(2, FEED, "b")],              {},                   {},                 2),
    ([t(1, BACKFILL, "a"), t(3, FEED, "a"), t(2, FEED, "a")], {"a": 9.0},    {},                 2),
]


@pytest.mark.parametrize("waiting, served, weights, expected", PICKS)
def test_pick(waiting, served, weights, expected):
    chosen = pick(waiting, served, weights)
    assert (chosen.seq if chosen else None) == expected


@pytest.mark.parametrize("waiting, passed, expected", [
    ([t(1, BACKFILL, "a"), t(2, FRESH, "b")], FRESH_RUN - 1, 2),       # freshness first ...
    ([t(1, BACKFILL, "a"), t(2, FRESH, "b")], FRESH_RUN, 1),           # ... until backfill was passed over enough
    ([t(2, FRESH, "b"), t(3, FRESH, "c")], FRESH_RUN + 3, 2),          # nothing else waits: freshness
    ([t(1, BACKFILL, "a"), t(2, FRESH, "b"), t(3, FEED, "c")], FRESH_RUN, 3),     # a feed read still first
])
def test_freshness_goes_first_but_backfill_is_never_passed_over_for_good(waiting, passed, expected):
    assert pick(waiting, {}, {}, passed).seq == expected


@pytest.mark.parametrize("before, started, waiting, after", [
    (0, t(2, FRESH, "b"), [t(1, BACKFILL, "a")], 1),
    (3, t(2, FRESH, "b"), [t(1, BACKFILL, "a"), t(4, FRESH, "b")], 4),
    (3, t(2, FRESH, "b"), [t(4, FRESH, "b")], 0),                       # no backfill waited
    (4, t(1, BACKFILL, "a"), [t(2, FRESH, "b")], 0),                    # backfill had its turn
    (2, t(3, FEED, "c"), [t(1, BACKFILL, "a")], 2),                     # a feed read counts for nothing
])
def test_what_counts_as_passing_backfill_over(before, started, waiting, after):
    assert passed_over(before, started, waiting) == after


def test_under_endless_freshness_work_backfill_gets_one_request_in_five():
    served, passed, lanes = {}, 0, []
    backfill = t(0, BACKFILL, "a")
    for seq in range(1, 101):
        waiting = [backfill, t(seq, FRESH, "b")]
        chosen = pick(waiting, served, {}, passed)
        lanes.append(chosen.lane)
        passed = passed_over(passed, chosen, [w for w in waiting if w is not chosen])
    assert lanes.count(BACKFILL) == 100 // (FRESH_RUN + 1) and lanes[:FRESH_RUN + 1][-1] == BACKFILL


def test_weighted_fair_queueing_shares_backfill_requests_by_weight():
    served: dict[str, float] = {}
    weights = {"a": 3.0, "b": 1.0}
    counts = {"a": 0, "b": 0}
    waiting = [t(1, BACKFILL, "a"), t(2, BACKFILL, "b")]
    for _ in range(400):
        chosen = pick(waiting, served, weights)
        counts[chosen.tenants[0]] += 1
        served = charge(served, chosen)
    assert counts == {"a": 300, "b": 100}


def test_fresh_requests_cost_no_backfill_share_and_a_shared_source_splits_its_cost():
    assert charge({}, t(1, FRESH, "a")) == {}
    assert charge({"a": 1.0}, t(1, BACKFILL, "a", "b")) == {"a": 1.5, "b": 0.5}


def test_a_request_leaving_the_cycle_takes_its_cost_back():
    assert charge({"a": 1.5, "b": 0.5}, t(1, BACKFILL, "a", "b"), -1.0) == {"a": 1.0}


def test_the_queue_counts_the_other_nodes_requests_so_a_tenant_served_elsewhere_waits_here():
    served = cluster_served({"a": 30.0, "b": 2.0}, {"b": 3.0, "c": 1.0})
    assert served == {"a": 30.0, "b": 5.0, "c": 1.0}
    # here, b was served more than a; across the nodes a was: a waits
    assert pick([t(1, BACKFILL, "a"), t(2, BACKFILL, "b")], served, {"a": 2.0, "b": 1.0}).seq == 2


def test_demand_counts_sources_per_tenant_and_lane():
    fresh, backfill = demand([t(1, FRESH, "a"), t(2, BACKFILL, "a", "b"), t(3, BACKFILL, "b"), t(4, FEED, "a")])
    assert fresh == {"a": 1} and backfill == {"a": 2, "b": 2}


@pytest.mark.parametrize("ticket, asked_seq, may_start", [
    (t(5, BACKFILL, "a"), None, True),        # not asked: anything
    (t(5, FEED, "a"), None, True),
    (t(5, FRESH, "a"), 6, True),              # asked: the freshness work that waited before the ask
    (t(6, FRESH, "a"), 6, False),             # ... not what came after it
    (t(5, FEED, "a"), 6, True),               # ... and the feed read that waited
    (t(6, FEED, "a"), 6, False),
    (t(5, BACKFILL, "a"), 6, False),          # ... and no backfill
])
def test_asked_for_its_slots_a_node_drains_only_the_freshness_work_already_waiting(ticket, asked_seq, may_start):
    assert drains(ticket, asked_seq) is may_start


HELD = Budget(gen=3, wiki_host="h", windows=(Window(100.0, 115.0, 1, 3.0), Window(115.0, 130.0, 1, 3.0)))


@pytest.mark.parametrize("budget, local, now, waiting, released", [
    (HELD, Local(last_start=108.0), 110.0, False, True),      # idle 2 s, nobody waiting: given back
    (HELD, Local(last_start=109.5), 110.0, False, False),     # a request started 0.5 s ago: a source is busy
    (HELD, Local(last_start=100.0), 110.0, True, False),      # a source waits for the slot
    (HELD, Local(in_flight=1, last_start=100.0), 110.0, False, False),   # a request still runs
    (HELD, Local(), 95.0, False, True),                       # a window still to come is given back too
    (HELD, Local(), 131.0, False, False),                     # every window over: nothing to give back
    (None, Local(), 110.0, False, False),                     # no budget, nothing held
])
def test_a_node_gives_its_windows_back_only_when_it_holds_one_and_nothing_asks_for_it(
        budget, local, now, waiting, released):
    assert may_release(budget, local, now, SKEW, waiting=waiting, idle_s=1.0) is released
