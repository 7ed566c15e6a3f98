"""The poll tick against real PostgreSQL and real HTTP spawn doubles: spread, idempotent sends,
node death, hub restart, subscription changes and per-node isolation."""
import time
from datetime import timedelta

import pytest
import requests
import sqlalchemy as sa

from blackwidow import router, sends, store
from blackwidow.models import Assignment, Node, Reload, Subscription
from blackwidow.decide import Rules, failed_retry_delay
from blackwidow.poller import PollerState, poll_once, utcnow
from blackwidow.spawn_client import SpawnClient
from shared.hashing import source_uuid
from shared.wire import PutAck
from tests.integration.coordination_support import (  # noqa: F401
    SECRET, WIKI, add_subscriptions, assignments, client, copies, db_url, expected_routes, held, hub_config, maker,
    register, spawns, subscriptions)

pytestmark = pytest.mark.integration


def steady(maker, client, config, state=None, ticks=2):
    for _ in range(ticks):
        result = poll_once(maker, client, config, state=state)
    return result


def test_subscriptions_spread_over_nodes_as_routing_says(maker, spawns, client, db_url):
    doubles = spawns(3)
    register(maker, doubles)
    ids = add_subscriptions(maker, 100, shared=20)          # 120 subscriptions on 100 articles
    config = hub_config(db_url)

    first = poll_once(maker, client, config)
    want = expected_routes(maker, [d.node_id for d in doubles])
    assert first.sent == 120 and first.send_failures == 0 and first.kind == "soft"
    assert held(doubles) == want
    assert assignments(maker) == {sub_id: (node, True) for sub_id, node in want.items()}
    rows = subscriptions(maker)
    assert {(r.node_id, r.state) for r in rows.values()} == {(n, "assigned") for n in set(want.values())}
    per_node = [len(d.subs) for d in doubles]
    assert sum(per_node) == 120 and min(per_node) >= 20, per_node
    # the second tenant's subscriptions share node (and so fetcher) with the first tenant's
    for shared_sub, twin in zip(ids[100:], ids[:20]):
        assert want[shared_sub] == want[twin]

    for d in doubles:
        d.reset_counts()
    second = poll_once(maker, client, config)
    assert second.kind is None and second.sent == 0
    assert sum(d.sent() for d in doubles) == 0
    assert {r.state for r in subscriptions(maker).values()} == {"running"}
    assert {r.revisions for r in subscriptions(maker).values()} == {3}
    with maker.begin() as session:
        reloads = session.scalars(sa.select(Reload)).all()
    assert [(r.kind, r.sends, r.drops) for r in reloads] == [("soft", 120, 0)]


def test_unacknowledged_sends_are_retried_and_resends_change_nothing(maker, spawns, client, db_url):
    (node,) = spawns(1)
    register(maker, [node])
    add_subscriptions(maker, 10)
    config = hub_config(db_url)

    node.fail_with = {"POST /v1/subscriptions": 503}
    result = poll_once(maker, client, config)
    assert result.send_failures == 10 and result.sent == 0
    assert set(assignments(maker).values()) == {(node.node_id, False)}
    assert {r.state for r in subscriptions(maker).values()} == {"pending"}

    node.fail_with = {}
    result = poll_once(maker, client, config)
    assert result.sent == 10
    assert set(assignments(maker).values()) == {(node.node_id, True)}

    # acknowledgements lost (say the hub died between send and commit): the node's report suffices
    with maker.begin() as session:
        session.execute(sa.update(Assignment).values(acked=False))
    node.reset_counts()
    result = poll_once(maker, client, config)
    assert (result.sent, result.adopted, node.sent("put")) == (0, 10, 0)
    assert set(assignments(maker).values()) == {(node.node_id, True)}

    spec = next(iter(node.subs.values()))
    (again,) = client.send_batch(node.url, [], [spec]).puts      # sending it again changes nothing
    assert isinstance(again, PutAck) and (again.id, again.changed) == (spec.id, False)


def test_dead_node_loses_its_subscriptions_within_node_failures_intervals(maker, spawns, client, db_url):
    doubles = spawns(3)
    register(maker, doubles)
    add_subscriptions(maker, 90)
    config = hub_config(db_url)
    state = PollerState()
    steady(maker, client, config, state)

    victim, survivors = doubles[1], [doubles[0], doubles[2]]
    want = expected_routes(maker, [d.node_id for d in survivors])
    victim.stop()
    stopped = time.monotonic()
    ticks, results = 0, []
    while not set(want.items()) <= copies(survivors):
        time.sleep(config.poll_interval_s)
        results.append(poll_once(maker, client, config, state=state))
        ticks += 1
        assert ticks <= config.node_failures + 1, results
    elapsed = time.monotonic() - stopped
    print(f"\nnode death -> all subscriptions moved: {ticks} ticks, {elapsed:.2f} s "
          f"at {config.poll_interval_s} s interval ({elapsed / config.poll_interval_s:.1f} intervals); "
          f"tick times {[round(r.seconds, 3) for r in results]}")
    assert ticks == config.node_failures
    assert results[-1].removed == (victim.node_id,) and results[-1].kind == "hard"
    assert assignments(maker) == {sub_id: (node, True) for sub_id, node in want.items()}
    with maker.begin() as session:
        assert session.get(Node, victim.node_id).state == "dead"
        assert session.scalars(sa.select(Reload.kind).order_by(Reload.id.desc())).first() == "hard"
    assert {r.node_id for r in subscriptions(maker).values()} == {d.node_id for d in survivors}
    # make before break: the copies that moved between survivors are dropped once their new node has them
    poll_once(maker, client, config, state=state)
    assert held(survivors) == want and len(copies(survivors)) == len(want)

    # the spawn comes back and registers again: it is routed to once more (hard reload)
    victim.start(port=int(victim.url.rsplit(":", 1)[1]))
    register(maker, [victim])
    result = poll_once(maker, client, config, state=state)
    assert result.kind == "hard" and victim.node_id in result.live
    poll_once(maker, client, config, state=state)          # the moved copies' old ones are dropped
    assert held(doubles) == expected_routes(maker, [d.node_id for d in doubles])
    assert len(copies(doubles)) == len(want)


def test_restarted_hub_adopts_what_nodes_run_without_any_put(maker, spawns, client, db_url):
    doubles = spawns(3)
    register(maker, doubles)
    add_subscriptions(maker, 60)
    config = hub_config(db_url)
    steady(maker, client, config, PollerState())
    for d in doubles:
        d.reset_counts()

    # a new process: new engine, new HTTP session, nothing remembered but the database
    from blackwidow.db import make_sessionmaker
    fresh_maker = make_sessionmaker(db_url)
    fresh_client = SpawnClient(requests.Session(), SECRET)
    try:
        started = time.monotonic()
        result = poll_once(fresh_maker, fresh_client, config, state=PollerState())
        first_tick = time.monotonic() - started
        # even with the assignment table lost, reports alone let the hub adopt
        with fresh_maker.begin() as session:
            session.execute(sa.delete(Assignment))
        again = poll_once(fresh_maker, fresh_client, config, state=PollerState())
    finally:
        fresh_maker.kw["bind"].dispose()
    print(f"\nhub restart: first tick {first_tick * 1000:.0f} ms, 60 subscriptions adopted")
    assert (result.kind, result.sent, result.dropped) == (None, 0, 0)
    assert (again.sent, again.adopted) == (0, 60)
    assert sum(d.sent() for d in doubles) == 0
    assert sum(d.count("POST") for d in doubles) == 6
    assert {r.state for r in subscriptions(maker).values()} == {"running"}
    assert set(assignments(maker).values()) <= {(d.node_id, True) for d in doubles}
    assert len(assignments(maker)) == 60


def test_subscription_changes_make_a_soft_reload(maker, spawns, client, db_url):
    doubles = spawns(2)
    register(maker, doubles)
    ids = add_subscriptions(maker, 10)
    config = hub_config(db_url)
    state = PollerState()
    steady(maker, client, config, state)
    disabled, deleted, requota, limited = ids[:4]
    with maker.begin() as session:
        store.update_subscription(session, disabled, {"enabled": False})
        store.delete_subscription(session, deleted)
        store.update_subscription(session, requota, {"quota": 7})
        store.update_subscription(session, limited, {"quota": 3})     # the double reports 3 revisions
    added = add_subscriptions(maker, 1, prefix="Fresh")[0]
    node_of = held(doubles)
    by_id = {d.node_id: d for d in doubles}
    by_id[node_of[limited]].set_state(limited, "limit_reached")
    for d in doubles:
        d.reset_counts()

    result = poll_once(maker, client, config, state=state)
    assert result.kind == "soft"
    assert (result.sent, result.dropped) == (2, 3)              # quota in place + new; disabled, deleted, limited
    assert by_id[node_of[requota]].subs[requota].quota == 7     # updated in place, same node
    assert set(held(doubles)) == set(ids[4:]) | {requota, added}
    rows = subscriptions(maker)
    assert (rows[disabled].state, rows[disabled].node_id) == ("disabled", None)
    assert (rows[limited].state, rows[limited].node_id) == ("limit_reached", None)
    assert deleted not in rows and rows[added].state == "assigned"
    with maker.begin() as session:
        reason = session.scalars(sa.select(Reload.reason).order_by(Reload.id.desc())).first()
    assert reason == "changed=1, new=1, stale=3"

    # re-enabled: routed and sent again
    with maker.begin() as session:
        store.update_subscription(session, disabled, {"enabled": True})
    assert poll_once(maker, client, config, state=state).sent == 1
    assert disabled in held(doubles)


def test_a_used_up_tenant_quota_shows_limit_reached_and_keeps_the_subscriptions_placed(maker, spawns, client, db_url):
    (node,) = spawns(1)
    register(maker, [node])
    ids = add_subscriptions(maker, 2, prefix="Budget")          # the double reports 3 revisions each
    with maker.begin() as session:
        tenant_id = session.get(Subscription, ids[0]).tenant_id
        store.update_tenant(session, tenant_id, {"quota": 6})
    config = hub_config(db_url)
    steady(maker, client, config)
    rows = subscriptions(maker)
    assert {(rows[i].state, rows[i].last_error) for i in ids} == \
        {("limit_reached", "tenant quota used up: 6 of 6 revisions")}
    assert set(held([node])) == set(ids)               # still on their node, unlike a subscription's own limit
    node.reset_counts()
    assert poll_once(maker, client, config).kind is None and node.sent() == 0

    with maker.begin() as session:
        store.update_tenant(session, tenant_id, {"quota": 100})
    poll_once(maker, client, config)
    rows = subscriptions(maker)
    assert {(rows[i].state, rows[i].last_error) for i in ids} == {("running", None)}
    assert node.sent() == 0                              # raising the quota resends nothing


def test_failed_subscriptions_are_restarted_with_backoff(maker, spawns, client, db_url):
    (node,) = spawns(1)
    register(maker, [node])
    (sub_id,) = add_subscriptions(maker, 1)
    config = hub_config(db_url)
    rules = Rules.of(config)
    steady(maker, client, config)
    node.set_state(sub_id, "failed")
    node.reset_counts()

    soon = poll_once(maker, client, config)              # just sent: the failure is recorded, no re-send
    assert soon.sent == 0 and subscriptions(maker)[sub_id].state == "failed"
    start = utcnow()
    at = lambda seconds: (lambda: start + timedelta(seconds=seconds))      # noqa: E731
    first = rules.failed_retry_s + 1
    result = poll_once(maker, client, config, now=at(first))
    assert (result.kind, result.dropped, result.sent) == ("soft", 1, 1)
    assert node.sends == [("drop", sub_id), ("put", sub_id)]                    # dropped, then started afresh
    assert node.requests.count(("POST", "/v1/subscriptions")) == 1               # in one request
    assert subscriptions(maker)[sub_id].state == "assigned"

    # it fails again: the next re-send waits twice as long, then four times, up to the cap
    waited = first
    for failures in (1, 2, 3):
        node.set_state(sub_id, "failed")
        delay = failed_retry_delay(failures, rules)
        assert poll_once(maker, client, config, now=at(waited + delay - 1)).sent == 0
        assert poll_once(maker, client, config, now=at(waited + delay + 1)).sent == 1
        waited += delay + 1
    assert failed_retry_delay(20, rules) == rules.failed_retry_max_s

    # once it runs again the backoff starts over
    node.set_state(sub_id, "running")
    poll_once(maker, client, config, now=at(waited + 1))
    with maker.begin() as session:
        row = session.get(Assignment, sub_id)
    assert (row.failures, row.retry_at) == (0, None)


def test_one_failing_node_never_stops_the_tick(maker, spawns, client, db_url):
    healthy, erroring, gone = spawns(3)
    register(maker, [healthy, erroring, gone])
    add_subscriptions(maker, 60)
    erroring.fail_with = {"POST": 500}
    gone.stop()
    config = hub_config(db_url)

    result = poll_once(maker, client, config)
    want = expected_routes(maker, [healthy.node_id, erroring.node_id, gone.node_id])
    assert set(result.failed) == {erroring.node_id, gone.node_id} and result.removed == ()
    assert held([healthy]) == {s: n for s, n in want.items() if n == healthy.node_id}
    assert result.sent == len(healthy.subs) and result.send_failures == 0
    with maker.begin() as session:
        counts = {n.id: (n.state, n.consecutive_failures) for n in session.scalars(sa.select(Node))}
    assert counts == {healthy.node_id: ("live", 0), erroring.node_id: ("live", 1), gone.node_id: ("live", 1)}
    # the unreachable nodes' subscriptions wait (pending) until they answer or are removed
    rows = subscriptions(maker)
    assert {rows[s].state for s, n in want.items() if n != healthy.node_id} == {"pending"}


def test_tick_writes_skip_rows_the_admin_api_changed_meanwhile(maker):
    from blackwidow.store import coordination
    first, second = add_subscriptions(maker, 2)
    with maker.begin() as session:
        seen = coordination.load_snapshot(session).subscriptions
    with maker.begin() as session:                        # the API disables one between read and write
        store.update_subscription(session, first, {"enabled": False})
    with maker.begin() as session:
        coordination.update_subscriptions(session, {first: {"state": "running", "revisions": 5},
                                                    second: {"state": "running", "revisions": 5}}, seen)
    rows = subscriptions(maker)
    assert (rows[first].state, rows[first].enabled, rows[first].revisions) == ("disabled", False, 0)
    assert (rows[second].state, rows[second].revisions) == ("running", 5)


def test_rendezvous_routing_places_subscriptions_by_highest_weight(maker, spawns, client, db_url):
    doubles = spawns(3)
    register(maker, doubles)
    add_subscriptions(maker, 30)
    poll_once(maker, client, hub_config(db_url, BW_ROUTING="rendezvous"))
    assert held(doubles) == expected_routes(maker, [d.node_id for d in doubles], router.RENDEZVOUS)


def test_a_node_answering_as_another_node_counts_as_a_failed_poll(maker, spawns, client, db_url):
    (node,) = spawns(1)
    register(maker, [node])
    add_subscriptions(maker, 3)
    node.answer_as = "someone-else"
    result = poll_once(maker, client, hub_config(db_url))
    assert result.failed == (node.node_id,) and result.sent == 0 and node.subs == {}


def test_sends_travel_in_batches_and_an_unreachable_node_gets_no_more_requests(maker, spawns, client, db_url):
    (first,) = spawns(1)
    register(maker, [first])
    count = 2 * sends.BATCH_SIZE + 100
    add_subscriptions(maker, count)
    config = hub_config(db_url)
    state = PollerState()
    batches = ("POST", "/v1/subscriptions")

    first.fail_with = {"POST /v1/subscriptions": 503}
    result = poll_once(maker, client, config, state=state)
    assert (result.sent, result.send_failures) == (0, count)
    assert first.requests.count(batches) == 1              # the rest of its batches were not sent

    first.fail_with = {}
    first.reset_counts()
    result = poll_once(maker, client, config, state=state)
    assert (result.sent, result.send_failures) == (count, 0) and len(first.subs) == count
    assert first.requests.count(batches) == 3 and first.sent() == count

    # a node joins: what moves is dropped on one node and put on the other, a batch per BATCH_SIZE items
    (second,) = spawns(1)
    register(maker, [second])
    first.reset_counts()
    result = poll_once(maker, client, config, state=state)
    moved = len(second.subs)
    assert result.kind == "hard" and (result.sent, result.dropped) == (moved, 0) and moved > 0
    # make before break: the old copies go in the next tick, once the new node has acknowledged them
    dropped = poll_once(maker, client, config, state=state)
    assert dropped.kind == "soft" and (dropped.sent, dropped.dropped) == (0, moved)
    assert held([first, second]) == expected_routes(maker, [first.node_id, second.node_id])
    assert len(copies([first, second])) == count
    for double, items in ((first, moved), (second, moved)):
        assert double.requests.count(batches) == -(-items // sends.BATCH_SIZE)
    assert first.sent("put") == 0 and second.sent("drop") == 0


def test_an_item_the_node_refuses_fails_alone_and_is_sent_again_next_tick(maker, spawns, client, db_url):
    (node,) = spawns(1)
    register(maker, [node])
    ids = add_subscriptions(maker, 5)
    config = hub_config(db_url)
    node.refuse = {ids[0]}

    result = poll_once(maker, client, config)
    assert (result.sent, result.send_failures) == (4, 1) and set(node.subs) == set(ids[1:])
    assert assignments(maker)[ids[0]] == (node.node_id, False)
    assert subscriptions(maker)[ids[0]].state == "pending"

    node.refuse = set()
    node.reset_counts()
    result = poll_once(maker, client, config)
    assert (result.sent, result.send_failures) == (1, 0) and node.sends == [("put", ids[0])]
    assert assignments(maker)[ids[0]] == (node.node_id, True)


def test_a_reported_page_key_moves_a_redirects_subscription_to_its_target(maker, spawns, client, db_url):
    doubles = spawns(3)
    register(maker, doubles)
    (target,) = add_subscriptions(maker, 1, prefix="Target")
    node_ids = sorted(d.node_id for d in doubles)
    with maker.begin() as session:
        target_key = session.get(Subscription, target).source_uuid
    # a redirect title whose own source uuid routes elsewhere than its target's
    k = next(k for k in range(100) if router.node_for(str(source_uuid(WIKI, f"Redirect {k} 0")), node_ids)
             != router.node_for(target_key, node_ids))
    (redirect,) = add_subscriptions(maker, 1, prefix=f"Redirect {k}")       # titled 'Redirect {k} 0'
    config = hub_config(db_url)
    state = PollerState()
    steady(maker, client, config, state)
    before = held(doubles)
    assert before[redirect] != before[target]
    by_id = {d.node_id: d for d in doubles}
    by_id[before[redirect]].page_keys[redirect] = target_key        # its spawn resolved the redirect

    result = poll_once(maker, client, config, state=state)
    assert result.kind == "soft" and (result.sent, result.dropped) == (1, 0)
    assert poll_once(maker, client, config, state=state).dropped == 1      # the old copy, once acknowledged
    after = held(doubles)
    assert after[redirect] == after[target] == before[target]
    assert redirect not in by_id[before[redirect]].subs
    rows = subscriptions(maker)
    assert (rows[redirect].page_key, rows[target].page_key) == (target_key, None)
    with maker.begin() as session:
        reasons = session.scalars(sa.select(Reload.reason).order_by(Reload.id.desc())).all()[:2]
    assert reasons == ["moved=1", "moved=1"]
    # its new node has not resolved the title yet: the stored key keeps it there
    assert poll_once(maker, client, config, state=state).sent == 0
    assert held(doubles)[redirect] == before[target]
