"""A scheduler's takeover in stages (blackwidow.takeover) on real PostgreSQL and HTTP spawn doubles: a restarted
scheduler whose subscriptions do not fit in one step reads the snapshot in a tick of its own, then polls and looks
at the nodes a group a tick; a node gets no send before its first poll; and the end is what a whole tick makes
of what changed while no scheduler led."""
import uuid

import pytest
import sqlalchemy as sa

from blackwidow import rebalance
from blackwidow.metrics import SchedulerMetrics
from blackwidow.models import Subscription
from blackwidow.poller import PollerState, poll_once
from blackwidow.store import changes
from shared.wire import SubscriptionSpec
from tests.integration.coordination_support import (  # noqa: F401
    WIKI, add_subscriptions, assignments, client, copies, db_url, expected_routes, held, hub_config, maker, register,
    spawns)

pytestmark = pytest.mark.integration


def test_a_restarted_scheduler_takes_the_nodes_over_a_group_a_tick_and_ends_as_a_whole_tick_would(
        maker, spawns, client, db_url):
    doubles = spawns(4)
    register(maker, doubles)
    ids = add_subscriptions(maker, 80)
    config = hub_config(db_url, BW_TAKEOVER_IDS="25")
    state = PollerState()
    first = poll_once(maker, client, config, state=state)     # nothing assigned yet: one whole tick places all
    assert (first.pending, first.sent) == (0, 80)
    poll_once(maker, client, config, state=state)
    everyone = [d.node_id for d in doubles]
    assert held(doubles) == expected_routes(maker, everyone)

    # while no scheduler leads: the admin API patches, deletes and adds; a node runs a copy it should not
    with maker.begin() as session:
        session.execute(sa.update(Subscription).where(Subscription.id.in_(ids[:5])).values(quota=1000))
        session.execute(sa.delete(Subscription).where(Subscription.id.in_(ids[5:8])))
        changes.note(session, ids[:8])
    added = add_subscriptions(maker, 6, prefix="Added")
    stray_node = next(d for d in doubles if ids[10] not in d.subs)
    stray_node.put(SubscriptionSpec(id=ids[10], source_uuid=str(uuid.uuid4()), tenant_id="t", wiki=WIKI, title="x"))
    for d in doubles:
        d.reset_counts()

    state, metrics = PollerState(), SchedulerMetrics()
    polled_at: dict[str, int] = {}          # node -> the takeover tick that first polled it
    sent_at: dict[str, int] = {}            # node -> the tick of its first send
    pending = []
    target = expected_routes(maker, everyone)
    tick = 0
    while tick < 20 and (tick < 6 or held(doubles) != target or len(copies(doubles)) != len(target)):
        result = poll_once(maker, client, config, state=state, metrics=metrics)
        pending.append(result.pending)
        for d in doubles:
            paths = [f"{m} {p}" for m, p in d.requests]
            if "POST /v1/status" in paths:
                polled_at.setdefault(d.node_id, tick)
            if "POST /v1/subscriptions" in paths:
                sent_at.setdefault(d.node_id, tick)
            d.reset_counts()
        if tick == 0:
            # the tick that read every row polls no node and sends nothing (the new ones wait for their nodes)
            assert (result.polled, result.sent, result.dropped) == (0, 0, 0)
            assert metrics.takeover_pending._value.get() == 4
        if result.pending:
            # a paced move sizes its steps by what steady ticks cost: a takeover's ticks are none
            assert state.cost == rebalance.Cost()
        tick += 1
    assert pending[:5] == [4, 3, 2, 1, 0], pending        # about 20 ids a node, 25 a step: a node a tick
    assert metrics.takeover_pending._value.get() == 0
    assert sorted(polled_at.values()) == [1, 2, 3, 4]
    assert all(sent_at[node] >= polled_at[node] for node in sent_at), (sent_at, polled_at)
    # what a whole tick makes of it: the patched sent again, the deleted and the stray copy dropped, the added placed
    assert held(doubles) == target and len(copies(doubles)) == len(target)
    assert set(target) == (set(ids) - set(ids[5:8])) | set(added)
    assert all(d.subs[sid].quota == 1000 for d in doubles for sid in ids[:5] if sid in d.subs)
    assert {sid: (node, True) for sid, node in target.items()} == assignments(maker)
