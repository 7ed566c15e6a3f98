"""Paced modulo routing (blackwidow.rebalance): a node-set change moves only what the nodes that left held, each
step of the frontier only the keys of the bands it passes, and the end is plain modulo."""
import json
import random

import pytest

from blackwidow import rebalance, router
from blackwidow.rebalance import SPACE, BandIndex, Layer, Routing
from shared.hashing import stable_hash

KEYS = [f"source-{i}" for i in range(3000)]


def routes(routing: Routing) -> dict[str, str]:
    return {key: rebalance.node_for(key, routing) for key in KEYS}


def plain(nodes) -> dict[str, str]:
    return {key: router.node_for(key, sorted(nodes)) for key in KEYS}


def band(key: str) -> int:
    return rebalance.band(stable_hash(key))


@pytest.mark.parametrize("per_tick, keys, expect", [
    (0, 1000, SPACE),                # 0: everything at once
    (1000, 1000, SPACE),             # as many as there are: everything at once
    (5000, 1000, SPACE),
    (250, 1000, SPACE // 4),
    (1, 3, -(-SPACE // 3)),          # rounded up: never a step of nothing
])
def test_a_step_takes_about_per_tick_of_the_keys(per_tick, keys, expect):
    assert rebalance.step(per_tick, keys) == expect


def test_with_no_routing_before_the_live_nodes_route_at_once():
    assert rebalance.begin(None, {"b", "a"}) == Routing((Layer(("a", "b"), SPACE),))
    assert not rebalance.tick(None, {"a"}, 10, 1000).paced
    assert routes(rebalance.begin(None, "ABC")) == plain("ABC")


def test_the_same_node_set_changes_nothing():
    settled = rebalance.settled("ABC")
    assert rebalance.begin(settled, "CBA") is settled
    assert rebalance.tick(settled, "ABC", 10, 1000) == rebalance.Step(settled, False)


def test_no_live_nodes_forget_the_layers():
    moving = rebalance.begin(rebalance.settled("AB"), "ABC")
    assert rebalance.begin(moving, ()) == rebalance.settled(())


@pytest.mark.parametrize("seed", range(40))
def test_a_change_moves_what_left_and_each_step_only_its_bands(seed):
    rng = random.Random(seed)
    pool = "ABCDEFG"
    nodes = set(rng.sample(pool, 3))
    routing = rebalance.settled(nodes)
    now = routes(routing)
    for _ in range(12):
        if rng.random() < 0.4:                       # a node joins (maybe one that left before) or leaves
            change = rng.choice(pool)
            if change in nodes and len(nodes) > 1:
                nodes.discard(change)
            else:
                nodes.add(change)
            began = rebalance.begin(routing, nodes)
            after = routes(began)
            moved = {k for k in KEYS if after[k] != now[k]}
            assert all(now[k] not in nodes for k in moved), "only what the nodes that left held moves"
            assert all(after[k] in nodes for k in KEYS)
            routing, now = began, after
        step = rebalance.tick(routing, nodes, rng.choice([300, 700, 1500]), len(KEYS))
        after = routes(step.routing)
        moved = {k for k in KEYS if after[k] != now[k]}
        if routing.moving:
            assert step.paced or (step.low, step.high) == (0, SPACE)
            assert all(step.low <= band(k) < step.high for k in moved), "only the bands the frontier passed"
        else:
            assert not moved
        assert len(step.routing.layers) <= rebalance.MAX_LAYERS
        routing, now = step.routing, after
    for _ in range(20):
        routing = rebalance.tick(routing, nodes, 300, len(KEYS)).routing
    assert not routing.moving
    assert routes(routing) == plain(nodes), "at the end, plain modulo"


def test_one_node_joining_a_thousand_moves_a_band_at_a_time():
    nodes = [f"n{i:04d}" for i in range(1000)]
    before = rebalance.settled(nodes)
    step = rebalance.tick(before, [*nodes, "n9999"], 300, len(KEYS))
    assert step.paced and (step.low, step.high) == (0, rebalance.step(300, len(KEYS)))
    moved = sum(rebalance.node_for(k, step.routing) != router.node_for(k, nodes) for k in KEYS)
    assert 200 <= moved <= 400              # about a tenth of the keys, nearly all of which change node


def test_routing_round_trips_through_json_and_refuses_what_cannot_route():
    moving = rebalance.tick(rebalance.begin(rebalance.settled("ABC"), "AB"), "AB", 1, 10).routing
    moving = rebalance.begin(moving, "ABD")
    assert Routing.from_json(json.loads(json.dumps(moving.to_json()))) == moving
    for bad in ([], [{"nodes": ["A"], "frontier": 5}], [{"nodes": ["A"], "frontier": SPACE, "out": ["A"]}]):
        with pytest.raises(ValueError):
            Routing.from_json(bad)


def test_too_many_layers_settle_on_the_live_nodes():
    routing = rebalance.settled("AB")
    for nodes in ("ABC", "AB", "ABC", "AB", "ABC", "AB", "ABC", "AB"):
        routing = rebalance.begin(routing, nodes)
    assert routing == rebalance.settled("AB")


def test_the_band_index_finds_each_band_and_what_was_added():
    index = BandIndex({f"s{i}": key for i, key in enumerate(KEYS[:2000])})
    index.add({"late": KEYS[2500]})
    quarter = SPACE // 4
    seen = []
    for low in range(0, SPACE, quarter):
        got = index.between(low, low + quarter)
        assert all(low <= band(KEYS[int(sid[1:])] if sid != "late" else KEYS[2500]) < low + quarter for sid in got)
        seen += got
    assert sorted(seen) == sorted([*(f"s{i}" for i in range(2000)), "late"])
    assert len(index) == 2001


@pytest.mark.parametrize("fold_at", [10, 100_000])
def test_ids_added_one_by_one_are_found_before_and_after_they_are_folded_in(monkeypatch, fold_at):
    monkeypatch.setattr(rebalance, "FOLD_AT", fold_at)
    index = BandIndex({f"s{i}": KEYS[i] for i in range(100)})
    for i in range(100, 160):
        index.add({f"s{i}": KEYS[i]})
        expect = sorted(f"s{j}" for j in range(i + 1) if SPACE // 3 <= band(KEYS[j]) < 2 * SPACE // 3)
        assert sorted(index.between(SPACE // 3, 2 * SPACE // 3)) == expect
    assert len(index) == 160


@pytest.mark.parametrize("name, cost, target, most, expect", [
    ("pacing off", rebalance.Cost(3.0, 0.001), 10.0, 0, 0),
    ("nothing measured: a quarter", rebalance.Cost(), 10.0, 50_000, 12_500),
    ("what fits beside a steady tick", rebalance.Cost(2.0, 0.0002), 10.0, 50_000, 20_000),
    ("capped", rebalance.Cost(1.0, 0.00001), 10.0, 50_000, 50_000),
    ("a steady tick longer than the target: the least", rebalance.Cost(12.0, 0.0002), 10.0, 50_000, 2_500),
    ("free actions", rebalance.Cost(1.0, 0.0), 10.0, 50_000, 50_000),
    ("no steady tick yet: beside the polls", rebalance.Cost(None, 0.0002, 4.0), 10.0, 50_000, 15_000),
    ("at least one", rebalance.Cost(12.0, 0.1), 10.0, 8, 1),
])
def test_a_step_moves_what_fits_in_the_target_tick(name, cost, target, most, expect):
    assert rebalance.per_tick(cost, target, most) == expect, name


def test_ticks_measure_what_a_tick_costs_and_what_each_action_adds():
    cost = rebalance.measure(rebalance.Cost(), 9.0, 1000, whole=False, polls_s=4.0)
    assert cost == rebalance.Cost(None, 0.005, 4.0)    # no steady tick yet: beyond the tick's own polls
    assert rebalance.per_tick(cost, 10.0, 10_000) == 600            # (10 - 4) s for a put and a drop each
    cost = rebalance.measure(rebalance.Cost(), 3.0, 0, whole=False, polls_s=2.5)
    assert cost == rebalance.Cost(3.0, None, 2.5)
    cost = rebalance.measure(cost, 5.0, 0, whole=False, polls_s=4.5)
    assert cost.steady_s == 4.0                       # averaged, the newest weighing half
    assert rebalance.measure(cost, 70.0, 0, whole=True, polls_s=30.0) == cost     # a whole tick says nothing
    assert rebalance.measure(cost, 90.0, 10**6, whole=True, polls_s=30.0) == cost
    cost = rebalance.measure(cost, 14.0, 40_000, whole=False, polls_s=3.0)   # 10 s beyond a steady tick
    assert cost.per_action_s == pytest.approx(0.00025) and cost.steady_s == 4.0
    cost = rebalance.measure(cost, 2.0, 10, whole=False, polls_s=1.0)       # faster than a steady tick: no gain
    assert cost.per_action_s == pytest.approx(0.000125)
    assert rebalance.per_tick(rebalance.measure(cost, 14.0, 40_000, whole=False, polls_s=3.0), 10.0, 50_000) == \
        int(6.0 / (2 * (0.000125 + 0.00025) / 2))
