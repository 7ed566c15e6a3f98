import json
import os
import subprocess
import sys
import uuid

import pytest

from blackwidow.router import MODULO, RENDEZVOUS, assign, node_for

NODES = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"http://127.0.0.1:{8701 + i}")) for i in range(11)]
SUBS = {f"sub-{i}": str(uuid.uuid5(uuid.NAMESPACE_URL, f"article-{i}")) for i in range(5000)}


@pytest.mark.parametrize("strategy", [MODULO, RENDEZVOUS])
def test_assignment_is_the_same_in_another_process_with_another_hash_seed(strategy):
    subs = dict(list(SUBS.items())[:300])
    code = ("import json, sys; from blackwidow.router import assign; "
            "subs, nodes, strategy = json.loads(sys.stdin.read()); "
            "print(json.dumps(assign(subs, nodes, strategy), sort_keys=True))")
    outputs = set()
    for seed in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outputs.add(subprocess.run([sys.executable, "-c", code], input=json.dumps([subs, NODES[:5], strategy]),
                                   env=env, capture_output=True, text=True, check=True).stdout.strip())
    assert outputs == {json.dumps(assign(subs, NODES[:5], strategy), sort_keys=True)}


@pytest.mark.parametrize("strategy", [MODULO, RENDEZVOUS])
def test_assignment_spreads_evenly(strategy):
    counts: dict[str, int] = {}
    for node in assign(SUBS, NODES[:5], strategy).values():
        counts[node] = counts.get(node, 0) + 1
    assert set(counts) == set(NODES[:5])
    assert min(counts.values()) > 900 and max(counts.values()) < 1100      # 1000 each, +-10 %


def test_modulo_is_hash_modulo_over_sorted_node_ids():
    from shared.hashing import stable_hash
    ordered = sorted(NODES[:3])
    result = assign(SUBS, reversed(NODES[:3]))          # input order does not matter
    for sub_id, source in list(SUBS.items())[:100]:
        assert result[sub_id] == ordered[stable_hash(source) % 3]


@pytest.mark.parametrize("strategy", [MODULO, RENDEZVOUS])
def test_subscriptions_on_the_same_article_share_a_node(strategy):
    source = SUBS["sub-7"]
    subs = {f"tenant-{i}": source for i in range(20)}
    assert len(set(assign(subs, NODES, strategy).values())) == 1


def test_no_live_nodes_assigns_nothing():
    assert assign(SUBS, []) == {}


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError):
        node_for("x", NODES, "random")


def _moved_fraction(strategy: str) -> float:
    before = assign(SUBS, NODES[:10], strategy)
    after = assign(SUBS, NODES[:11], strategy)
    return sum(before[s] != after[s] for s in SUBS) / len(SUBS)


def test_growing_from_10_to_11_nodes_moves_most_with_modulo_and_few_with_rendezvous():
    modulo, rendezvous = _moved_fraction(MODULO), _moved_fraction(RENDEZVOUS)
    # modulo: a source stays only if h % 10 == h % 11, about 1 in 11; rendezvous: only what the new node wins
    assert 0.85 < modulo < 0.95
    assert 0.06 < rendezvous < 0.12
    print(f"moved on 10->11 nodes: modulo {modulo:.1%}, rendezvous {rendezvous:.1%}")


def test_rendezvous_moves_only_to_the_new_node():
    before = assign(SUBS, NODES[:10], RENDEZVOUS)
    after = assign(SUBS, NODES[:11], RENDEZVOUS)
    assert {after[s] for s in SUBS if before[s] != after[s]} == {NODES[10]}


def test_winners_in_numpy_blocks_are_node_for_exactly():
    from blackwidow import router
    sources = list(SUBS.values())[:2000]
    picked = [router.node_for(s, sorted(NODES), RENDEZVOUS) for s in sources]
    assert router.winners(sources, NODES) == [(router.weight(node, s), node) for node, s in zip(picked, sources)]
    assert router.winners([], NODES) == []


def test_rendezvous_weight_of_two_nodes_with_one_hash_goes_to_the_greater_id(monkeypatch):
    from blackwidow import router
    monkeypatch.setattr(router, "stable_hash", lambda value: 7 if value in ("a", "b") else 11)
    assert router.node_for("s", ["a", "b"], RENDEZVOUS) == "b"
    assert router.winners(["s"], ["a", "b"]) == [(router.weight("b", "s"), "b")]


def test_rendezvous_memo_follows_joins_and_leaves_as_a_fresh_computation():
    from blackwidow.router import RendezvousMemo
    memo = RendezvousMemo()
    sources = sorted(set(SUBS.values()))[:1500]
    for nodes in (NODES[:4], NODES[:6], NODES[1:6], NODES[1:6], [NODES[0], NODES[9]], NODES):
        ordered = sorted(nodes)
        assert memo.route(sources, ordered) == {s: node_for(s, ordered, RENDEZVOUS) for s in sources}
    # a partial call keeps what it knows of the sources it was not asked about
    memo.route(sources[:10], sorted(NODES[:3]), forget=False)
    assert memo.route(sources, sorted(NODES[:3])) == {s: node_for(s, sorted(NODES[:3]), RENDEZVOUS)
                                                      for s in sources}


def test_a_partial_call_across_a_node_set_change_forgets_what_it_was_not_asked_and_stays_exact():
    from blackwidow.router import RendezvousMemo
    memo = RendezvousMemo()
    sources = sorted(set(SUBS.values()))[:1500]
    memo.route(sources, sorted(NODES[:5]))
    asked = sources[:40]
    assert memo.route(asked, sorted(NODES[:6]), forget=False) == {s: node_for(s, sorted(NODES[:6]), RENDEZVOUS)
                                                                  for s in asked}
    assert len(memo._best) == len(asked)
    for nodes in (NODES[:6], NODES[1:6]):        # the forgotten ones are weighed again when asked
        ordered = sorted(nodes)
        assert memo.route(sources, ordered) == {s: node_for(s, ordered, RENDEZVOUS) for s in sources}


def test_a_whole_call_forgets_sources_no_longer_routed_once_they_outnumber_the_subscriptions():
    from blackwidow.router import RendezvousMemo
    memo = RendezvousMemo()
    sources = sorted(set(SUBS.values()))[:100]
    four = sorted(NODES[:4])
    memo.route(sources, four)
    subs = {f"id{i}": sources[i % 10] for i in range(40)}         # 40 subscriptions on 10 sources
    assert memo.assign(subs, four) == {sid: node_for(s, four, RENDEZVOUS) for sid, s in subs.items()}
    assert len(memo._best) == 10             # 100 remembered, 40 routed: only the 10 routed are kept
    memo.route(sources[:50], four)
    many = {f"id{i}": sources[i % 10] for i in range(60)}         # 60 on 10: the other 40 are left over
    assert memo.assign(many, four) == {sid: node_for(s, four, RENDEZVOUS) for sid, s in many.items()}
    assert len(memo._best) == 50
    # what is left over follows node-set changes like the rest: asked again, it is still exact
    for nodes in (NODES[:6], NODES[2:6]):
        ordered = sorted(nodes)
        assert memo.assign(many, ordered) == {sid: node_for(s, ordered, RENDEZVOUS) for sid, s in many.items()}
    assert memo.route(sources[:50], sorted(NODES[2:6])) == {s: node_for(s, sorted(NODES[2:6]), RENDEZVOUS)
                                                            for s in sources[:50]}
    assert memo.assign({}, sorted(NODES[2:6])) == {}


def test_winning_nodes_are_the_winners_nodes():
    from blackwidow import router
    sources = list(SUBS.values())[:500]
    assert list(router.winning_nodes(sources, NODES)) == [node for _, node in router.winners(sources, NODES)]
    assert list(router.winning_nodes([], NODES)) == []


def test_a_schedulers_memo_is_its_own_and_clearing_it_keeps_routing_exact():
    from blackwidow import router
    sources = sorted(set(SUBS.values()))[:200]
    ordered = sorted(NODES[:5])
    memo, other = router.RendezvousMemo(), router.RendezvousMemo()
    before = router.assign({s: s for s in sources}, ordered, RENDEZVOUS, memo=memo)
    assert len(memo._best) == 200 and other._best == {}         # nothing shared between schedulers
    assert router.assign({s: s for s in sources}, ordered, RENDEZVOUS) == before     # none kept: the same
    memo.clear()
    assert memo._best == {}
    assert router.assign({s: s for s in sources[:20]}, ordered, RENDEZVOUS, partial=True, memo=memo) == \
        {s: before[s] for s in sources[:20]}
    assert router.assign({s: s for s in sources}, sorted(NODES[:6]), RENDEZVOUS, memo=memo) == \
        {s: node_for(s, sorted(NODES[:6]), RENDEZVOUS) for s in sources}
