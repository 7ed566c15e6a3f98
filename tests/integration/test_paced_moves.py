"""Paced moves on real PostgreSQL and HTTP spawn doubles (blackwidow.rebalance): under modulo, one node joining
moves its share band by band, a few route keys a tick; a page never runs on two nodes longer than its
make-before-break tick; a scheduler that takes over mid-way goes on from the layers in the database; the end is
plain modulo routing."""
import pytest
import sqlalchemy as sa

from blackwidow.metrics import SchedulerMetrics
from blackwidow.models import SchedulerEpoch
from blackwidow.poller import PollerState, poll_once
from tests.integration.coordination_support import (  # noqa: F401
    add_subscriptions, assignments, client, copies, db_url, expected_routes, held, hub_config, maker, register,
    spawns)

pytestmark = pytest.mark.integration


def routing_row(maker) -> str | None:
    with maker.begin() as session:
        return session.scalar(sa.select(SchedulerEpoch.routing))


def test_a_node_joining_moves_a_band_a_tick_and_a_new_leader_goes_on(maker, spawns, client, db_url):
    doubles = spawns(4)
    register(maker, doubles[:3])
    ids = add_subscriptions(maker, 60, shared=10)   # 70 subscriptions on 60 articles
    config = hub_config(db_url, BW_MOVES_PER_TICK="8")
    state = PollerState()
    for _ in range(2):
        poll_once(maker, client, config, state=state)
    three = [d.node_id for d in doubles[:3]]
    assert held(doubles) == expected_routes(maker, three)
    before = held(doubles)

    register(maker, doubles[3:])
    everyone = [d.node_id for d in doubles]
    target = expected_routes(maker, everyone)
    must_move = {sid for sid, node in before.items() if target[sid] != node}
    assert len(must_move) > 30                       # modulo: most of them

    puts_per_tick, done, ticks = [], [], 0
    metrics = SchedulerMetrics()
    while held(doubles) != target or len(copies(doubles)) != len(target):
        if ticks == 4:
            # the scheduler restarts mid-way: a new leader reads the layers and goes on band by band
            assert '"frontier"' in (routing_row(maker) or "")
            state = PollerState()
        result = poll_once(maker, client, config, state=state, metrics=metrics)
        puts_per_tick.append(result.sent)
        done.append(metrics.move_done._value.get())
        ticks += 1
        now = held(doubles)
        # every subscription runs on its old node or its new one, and the copies of one article stay together
        assert all(now[sid] in (before[sid], target[sid]) for sid in now)
        assert set(now) == set(target)
        assert all(now[twin] == now[sid] for sid, twin in zip(ids[:10], ids[60:]))
        assert ticks < 40
    assert ticks >= 5, puts_per_tick                 # band by band, not all at once
    assert max(puts_per_tick) <= 25, puts_per_tick   # about 8 route keys a tick (one article may have 2 subs)
    assert sum(puts_per_tick) >= len(must_move)
    assert any(0 < share < 1 for share in done) and done[-1] == 1.0, done      # /metrics shows the move
    assert {sid: (node, True) for sid, node in target.items()} == assignments(maker)
    assert '"frontier": 4294967296' in routing_row(maker) and routing_row(maker).count("frontier") == 1


def test_without_pacing_a_node_joining_moves_everything_in_one_tick(maker, spawns, client, db_url):
    doubles = spawns(3)
    register(maker, doubles[:2])
    add_subscriptions(maker, 40)
    config = hub_config(db_url, BW_MOVES_PER_TICK="0")
    state = PollerState()
    poll_once(maker, client, config, state=state)
    register(maker, doubles[2:])
    target = expected_routes(maker, [d.node_id for d in doubles])
    poll_once(maker, client, config, state=state)
    poll_once(maker, client, config, state=state)     # the old copies go once the new nodes have them
    assert held(doubles) == target and len(copies(doubles)) == len(target)
