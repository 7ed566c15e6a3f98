"""The lease arithmetic (blackwidow/quota/arithmetic.py): table tests of each rule, then random runs of a whole
world (tests/unit/blackwidow/quota_model.py) asserting the invariant after every step."""
import random

import pytest

from blackwidow.quota import arithmetic as quotas
from blackwidow.quota.arithmetic import Dynamics, Holder, Params, Reported, Sub, SubLease
from tests.unit.blackwidow.quota_model import STEP_S, World

P = Params(ttl_s=10.0, margin_s=3.0, settle_s=30.0, horizon_s=6.0)
T = "tenant"


def plan(quota, subs, states=None, dynamics=None, now=100.0, frozen=False):
    return quotas.plan_tenant(T, quota, frozen, subs, states or {}, dynamics or {}, now, P)


def confirmed(result, now=100.0, counts=None):
    """The states after every node answered applying what it was sent (counts: {sid: count})."""
    states = dict(result.states)
    for sid, (node, gen, cap) in result.leases.items():
        report = Reported(count=(counts or {}).get(sid, 0), running=True, lease_gen=gen, lease_cap=cap, synced=True)
        states[sid] = quotas.note_count(quotas.observe(states[sid], node, True, True, report, now, P, boot="b1"),
                                        report)
    return states


def test_waterfill_splits_a_tight_budget_evenly_and_serves_small_requests_in_full():
    assert sorted(quotas.waterfill(1000, {f"s{i}": 500 for i in range(6)}).values()) == [166] * 2 + [167] * 4
    assert quotas.waterfill(100, {"a": 10, "b": 500, "c": 500}) == {"a": 10, "b": 45, "c": 45}
    assert quotas.waterfill(0, {"a": 5}) == {"a": 0}
    assert quotas.waterfill(50, {"a": 0, "b": 7}) == {"a": 0, "b": 7}


def test_levels_are_max_min_fair_above_each_count():
    assert quotas.levels(100, {"a": 10, "b": 0}, {"a": 510, "b": 500}) == {"a": 50, "b": 50}
    assert quotas.levels(100, {"a": 70, "b": 0}, {"a": 510, "b": 500}) == {"a": 70, "b": 30}
    assert quotas.levels(100, {"a": 0, "b": 0}, {"a": 20, "b": 500}) == {"a": 20, "b": 80}
    assert quotas.levels(50, {"a": 40, "b": 30}, {"a": 90, "b": 90}) == {"a": 40, "b": 30}   # over: the counts
    assert quotas.levels(101, {"a": 0, "b": 0}, {"a": 500, "b": 500}) == {"a": 51, "b": 50}


def test_a_late_subscription_gets_its_fair_share_back_from_the_others_headroom():
    early = [Sub(f"s{i}", used=0, node="n1") for i in range(5)]
    states = confirmed(plan(1000, early), counts={s.id: 100 for s in early})
    subs = [Sub(s.id, used=100, node="n1") for s in early] + [Sub("late", used=0, node="n2")]
    rebalance = plan(1000, subs, states)
    caps = {sid: cap for sid, (_, _, cap) in rebalance.leases.items()}
    assert caps.pop("late") == 0                    # nothing is free before the others confirm
    assert set(caps.values()) == {166, 167} and sum(caps.values()) == 1000 - 166   # rounding favours held caps
    after = plan(1000, subs, confirmed(rebalance, counts={s.id: 100 for s in early}), now=101.0)
    assert after.leases["late"][2] == 166 and after.reserved == 1000


def test_first_grants_are_a_fair_share_of_a_tight_quota():
    subs = [Sub(f"s{i}", used=0, node=f"n{i % 3}") for i in range(6)]
    result = plan(1000, subs)
    assert sum(cap for _, _, cap in result.leases.values()) == 1000 == result.reserved
    assert {cap for _, _, cap in result.leases.values()} == {166, 167}
    assert {gen for _, gen, _ in result.leases.values()} == {1}


def test_slices_follow_the_consumption_rate_when_the_quota_is_loose():
    subs = [Sub("fast", used=100, node="n1"), Sub("slow", used=100, node="n1")]
    dynamics = {"fast": Dynamics(rate=100.0, sample=(100, 99.0)), "slow": Dynamics(rate=1.0, sample=(100, 99.0))}
    result = plan(10_000, subs, dynamics=dynamics)
    assert result.leases["fast"][2] == 100 + 600            # rate x horizon
    assert result.leases["slow"][2] == 100 + P.min_slice


def test_an_unchanged_confirmed_lease_is_renewed_under_the_same_generation():
    subs = [Sub("s", used=0, node="n1")]
    first = plan(100, subs)
    states = confirmed(first)
    again = plan(100, subs, states, now=102.0)
    assert again.leases == first.leases
    assert again.states["s"].holders["n1"].sent_at == 102.0
    # unconfirmed (the node restarted and reports no lease): a new generation, same cap
    report = Reported(count=0, running=True)
    lost = quotas.observe(states["s"], "n1", True, False, report, 102.0, P)
    assert plan(100, subs, {"s": lost}, now=103.0).leases["s"] == ("n1", 2, 100)


def test_a_lowered_cap_counts_until_the_node_confirms_it():
    subs = [Sub("a", used=10, node="n1"), Sub("b", used=0, node="n2")]
    states = confirmed(plan(100, subs), counts={"a": 10})
    # fair on totals: the count already delivered is part of a's share
    assert {sid: st.holders[n].held for sid, st in states.items() for n in st.holders} == {"a": 50, "b": 50}
    lowered = plan(30, subs, states)       # the quota goes down to 30: 20 too many
    caps = {sid: cap for sid, (_, _, cap) in lowered.leases.items()}
    assert sum(caps.values()) == 30 and caps["a"] >= 10
    assert lowered.reserved == 100         # nothing is freed before the nodes apply the lower caps
    after = confirmed(lowered, counts={"a": 10})
    assert sum(st.charge(10 if sid == "a" else 0) for sid, st in after.items()) == 30


def test_quota_below_usage_stops_every_subscription_at_its_count():
    subs = [Sub("a", used=40, node="n1"), Sub("b", used=25, node="n2")]
    states = confirmed(plan(200, subs), counts={"a": 40, "b": 25})
    result = plan(50, subs, states)
    assert {sid: cap for sid, (_, _, cap) in result.leases.items()} == {"a": 40, "b": 25}


def test_a_moved_subscription_waits_until_the_old_holder_is_surely_gone_then_keeps_its_cap():
    states = confirmed(plan(100, [Sub("s", used=0, node="n1")]), counts={"s": 30})
    moved = [Sub("s", used=30, node="n2")]
    early = plan(100, moved, states, now=105.0)
    assert early.leases == {}                                # n1 may still spend until its lease ran out
    late = plan(100, moved, early.states, now=100.0 + P.ttl_s + P.margin_s + 0.1)
    node, gen, cap = late.leases["s"]
    assert (node, cap) == ("n2", 100) and gen == 2           # n1's cap is the floor: n2 reveals the real count
    assert late.states["s"].floor == 100 and late.reserved == 100


def test_a_synced_report_reveals_the_count_behind_a_floor_and_idle_headroom_is_reclaimed_under_demand():
    state = SubLease(T, gen=2, floor=100, floor_gen=2, seen=30,
                     holders={"n2": Holder(gen=2, cap=100, held=100, sent_at=100.0, confirmed=True)})
    unsynced = quotas.note_count(state, Reported(count=60, running=True, lease_gen=2, lease_cap=100))
    assert unsynced.floor == 100
    revealed = quotas.note_count(state, Reported(count=60, running=True, lease_gen=2, lease_cap=100, synced=True))
    assert (revealed.floor, revealed.seen) == (0, 60)
    subs = [Sub("s", used=60, node="n2"), Sub("other", used=0, node="n1")]
    idle = {"s": Dynamics(rate=0.0, sample=(60, 99.0), stalls=P.idle_after)}
    result = plan(100, subs, {"s": revealed}, idle)
    assert result.leases["s"][2] == 60 and "other" in result.leases and result.unmet > 0
    # without demand from others, an idle subscription keeps its headroom
    assert plan(100, subs[:1], {"s": revealed}, idle).leases["s"][2] == 100


def test_an_absent_subscription_is_released_only_when_no_lease_can_still_arrive():
    states = confirmed(plan(100, [Sub("s", used=0, node="n1")]))
    holder = states["s"].holders["n1"]
    in_flight = SubLease(T, gen=1, holders={"n1": Holder(1, 100, 100, sent_at=100.0, acked=False)})
    assert quotas.observe(in_flight, "n1", True, False, None, 101.0, P).holders     # may still arrive
    assert quotas.observe(in_flight, "n1", True, False, None, 100.0 + P.margin_s, P).holders == {}
    released = quotas.observe(states["s"], "n1", True, False, None, 101.0, P, boot="b1")
    # what it may have spent stays charged until a later holder's synced report shows the count
    assert released.holders == {} and (released.floor, released.floor_gen) == (holder.held, 2)


def test_another_process_on_the_same_node_does_not_vouch_for_the_previous_one():
    states = confirmed(plan(100, [Sub("s", used=0, node="n1")]))
    st = quotas.observe(states["s"], "n1", True, True, Reported(count=5, running=True, lease_gen=1, lease_cap=100),
                        101.0, P, boot="b1")
    assert st.holders["n1"].boot == "b1" and st.floor == 0
    report = Reported(count=0, running=True, lease_gen=1, lease_cap=100, synced=True)
    restarted = quotas.observe(st, "n1", True, True, report, 102.0, P, boot="b2")
    assert restarted.floor == 100 and not restarted.holders["n1"].confirmed
    assert quotas.note_count(restarted, report).floor == 100        # not revealed under the old generation
    again = plan(100, [Sub("s", used=5, node="n1")], {"s": restarted}, now=103.0)
    assert again.leases["s"] == ("n1", 2, 100)


def test_a_frozen_tenant_grows_nothing():
    result = plan(1000, [Sub("s", used=7, node="n1")], frozen=True)
    assert result.leases == {"s": ("n1", 1, 7)}


def test_own_quota_bounds_the_lease():
    result = plan(1000, [Sub("s", used=0, quota=30, node="n1")])
    assert result.leases["s"][2] == 30 and result.reserved == 30


def test_rate_doubles_when_the_cap_binds():
    d = quotas.track(None, Reported(count=10, running=True, lease_cap=10), 100.0, P)
    d = quotas.track(d, Reported(count=10, running=True, lease_gen=1, lease_cap=10), 101.0, P)
    assert d.rate == P.min_slice / P.horizon_s and d.stalls == 0
    d = quotas.track(d, Reported(count=30, running=True, lease_gen=2, lease_cap=30), 102.0, P)
    assert d.rate == 20.0 * 1 or d.rate >= 2 * P.min_slice / P.horizon_s


@pytest.mark.parametrize("seed", range(60))
def test_random_worlds_never_overshoot(seed):
    """Lost, delayed, duplicated and reordered polls, lost answers, spawn kills and restarts, hub
    crashes between grant and poll, hub restarts, quotas raised and lowered: after every step the
    stored prefix of each page is within its charge and the tenant within its quota."""
    rng = random.Random(seed)
    world = World(rng, quota=rng.choice([60, 300, 1000]), subs=rng.randint(1, 8))
    for _ in range(int(120 / STEP_S)):
        world.step()
    world.calm()
    for _ in range(int(90 / STEP_S)):
        world.step()
    assert world.checks > 800
    total, goal = sum(world.stored.values()), min(world.quota, sum(world.pages.values()))
    if not world.lowered:
        assert total == goal, (total, goal, world.stored, world.pages)


@pytest.mark.parametrize("seed", range(10))
def test_without_faults_a_tight_quota_is_used_exactly_and_evenly(seed):
    rng = random.Random(1000 + seed)
    world = World(rng, quota=200, subs=6, faults=False)     # less than 6 first slices: fair shares
    world.pages = {sid: 2000 for sid in world.pages}
    world.stored = {sid: 0 for sid in world.pages}
    for _ in range(int(60 / STEP_S)):
        world.step()
    assert sum(world.stored.values()) == 200
    # even within a batch: one decided under a cap that was lowered to the fair level while it was being
    # written is still delivered (the hub keeps the old cap charged until then)
    assert max(world.stored.values()) - min(world.stored.values()) <= 2, world.stored
