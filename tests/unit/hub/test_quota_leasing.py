"""Quota leases through the hub's store (SQLite): grants written before the polls, learnt from reports,
read back after a restart, and shown by GET /v1/tenants/{id} and /metrics."""
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa

from blackwidow.quota import leasing
from blackwidow.models import Assignment, Subscription, Tenant
from blackwidow.quota import store as leases
from blackwidow.store import coordination, register_node
from shared.wire import LeaseStatus, StatusReport, SubscriptionStatus
from tests.fixtures.hub import LOCAL_WIKI, hub_config

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def setup(api, hub_maker, titles=("A", "B"), quota=100):
    tenant = api.simulate_post("/v1/tenants", json={"name": "q", "quota": quota}).json
    subs = api.simulate_post("/v1/subscriptions/bulk", json={
        "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "items": [{"title": t} for t in titles]}).json["items"]
    with hub_maker.begin() as session:
        node = register_node(session, "http://127.0.0.1:9901")[0].id
        for sub in subs:
            session.add(Assignment(subscription_id=sub["id"], node_id=node, acked=True, sent_at=T0))
    return tenant, [s["id"] for s in subs], node


def snapshot(hub_maker):
    with hub_maker.begin() as session:
        return leasing.mark_leased(coordination.load_snapshot(session), leasing.leased_tenants(leases.load(session)))


def grant(hub_maker, snap, live, config, at, memory):
    """The tick's grant step: plan, then write ahead."""
    with hub_maker.begin() as session:
        before = leases.load(session)
    lease_round = leasing.plan_grants(before, snap, live, leasing.params_for(config), at.timestamp(), memory)
    with hub_maker.begin() as session:
        leases.write_grants(session, lease_round, at)
    return lease_round


def learn(hub_maker, lease_round, snap, reports, at, memory):
    with hub_maker.begin() as session:
        leases.write_learnt(session, lease_round, leasing.learn(lease_round, snap, reports, set(), at, memory))


def report(node, snap, counts, lease_round, synced=True):
    subs = []
    for sid, count in counts.items():
        lease = lease_round.for_node(node)[sid]
        subs.append(SubscriptionStatus(id=sid, state="running", revisions=count,
                                       spec=snap.subscriptions[sid].spec.to_dict(),
                                       lease=LeaseStatus(gen=lease.gen, cap=lease.cap, expires_in_s=15.0,
                                                         synced=synced)))
    return StatusReport(node_id=node, boot_id="boot-1", attached=True, subscriptions=tuple(subs))


def granted_and_counted(hub_maker, config, node, counts, memory):
    """One tick's grant, the node's report of `counts` ({sub id: n}) learnt, and the hub's rows set to them."""
    snap = snapshot(hub_maker)
    first = grant(hub_maker, snap, frozenset({node}), config, T0, memory)
    learn(hub_maker, first, snap, {node: report(node, snap, counts, first)}, T0, memory)
    with hub_maker.begin() as session:
        for sid, n in counts.items():
            session.execute(sa.update(Subscription).where(Subscription.id == sid).values(revisions=n))
    return first


def test_grants_are_written_ahead_learnt_and_shown(api, hub_maker, sqlite_url):
    tenant, ids, node = setup(api, hub_maker)
    config = hub_config(sqlite_url)
    snap = snapshot(hub_maker)
    assert all(sub.spec.leased for sub in snap.subscriptions.values())
    memory = leasing.QuotaMemory()
    first = grant(hub_maker, snap, frozenset({node}), config, T0, memory)
    assert {sid: (lease.cap, lease.gen, lease.ttl_s) for sid, lease in first.for_node(node).items()} == \
        {ids[0]: (50, 1, config.detach_after_s), ids[1]: (50, 1, config.detach_after_s)}
    with hub_maker.begin() as session:                # in the database before any poll left
        stored = leases.load(session)
    assert {sid: st.charge() for sid, st in stored.states.items()} == {ids[0]: 50, ids[1]: 50}
    assert stored.renewing == {(ids[0], node), (ids[1], node)}
    assert api.simulate_get(f"/v1/tenants/{tenant['id']}").json["leased"] == 100

    learn(hub_maker, first, snap, {node: report(node, snap, {ids[0]: 20, ids[1]: 0}, first)}, T0, memory)
    with hub_maker.begin() as session:
        session.execute(sa.update(Subscription).where(Subscription.id == ids[0]).values(revisions=20))
    body = api.simulate_get(f"/v1/tenants/{tenant['id']}").json
    assert (body["quota"], body["used"], body["leased"]) == (100, 20, 80)
    metrics = api.simulate_get("/metrics").text
    assert f'bw_tenant_quota{{name="q",tenant="{tenant["id"]}"}} 100.0' in metrics
    assert f'bw_tenant_used{{name="q",tenant="{tenant["id"]}"}} 20.0' in metrics
    assert f'bw_tenant_leased{{name="q",tenant="{tenant["id"]}"}} 80.0' in metrics

    # next tick: same caps, same generations (renewals); the node stamp says when they were sent
    later = T0 + timedelta(seconds=2)
    second = grant(hub_maker, snapshot(hub_maker), frozenset({node}), config, later, memory)
    assert {sid: lease.gen for sid, lease in second.for_node(node).items()} == {ids[0]: 1, ids[1]: 1}
    with hub_maker.begin() as session:
        again = leases.load(session)
    assert {h.sent_at for st in again.states.values() for h in st.holders.values()} == {later.timestamp()}


def test_lowering_the_quota_below_usage_stops_at_the_counts(api, hub_maker, sqlite_url):
    tenant, ids, node = setup(api, hub_maker)
    config = hub_config(sqlite_url)
    memory = leasing.QuotaMemory()
    granted_and_counted(hub_maker, config, node, {ids[0]: 30, ids[1]: 10}, memory)
    assert api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"quota": 25}).status_code == 200
    lowered = grant(hub_maker, snapshot(hub_maker), frozenset({node}), config, T0 + timedelta(seconds=2), memory)
    assert {sid: lease.cap for sid, lease in lowered.for_node(node).items()} == {ids[0]: 30, ids[1]: 10}


def test_a_quota_set_on_an_unlimited_tenant_grants_nothing_until_unleased_copies_are_gone(api, hub_maker,
                                                                                          sqlite_url):
    tenant, ids, node = setup(api, hub_maker, quota=None)
    config = hub_config(sqlite_url)
    assert grant(hub_maker, snapshot(hub_maker), frozenset({node}), config, T0, leasing.QuotaMemory()).per_node == {}
    assert api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"quota": 100}).status_code == 200
    with hub_maker.begin() as session:
        set_at = session.get(Tenant, tenant["id"]).unleased_at
    assert set_at is not None
    soon = set_at.replace(tzinfo=timezone.utc) + timedelta(seconds=1)
    frozen = grant(hub_maker, snapshot(hub_maker), frozenset({node}), config, soon, leasing.QuotaMemory())
    assert {lease.cap for lease in frozen.for_node(node).values()} == {0}
    settled = soon + timedelta(seconds=leasing.params_for(config).settle_s)
    grown = grant(hub_maker, snapshot(hub_maker), frozenset({node}), config, settled, leasing.QuotaMemory())
    assert sum(lease.cap for lease in grown.for_node(node).values()) == 100


def unleased_report(node, snap, ids, count):
    """The node still runs the tenant's subscriptions as they were sent before the quota: without a lease."""
    subs = tuple(SubscriptionStatus(id=sid, state="running", revisions=count,
                                    spec={**snap.subscriptions[sid].spec.to_dict(), "leased": False})
                 for sid in ids)
    return StatusReport(node_id=node, boot_id="boot-1", attached=True, subscriptions=subs)


def test_a_tick_that_began_before_the_quota_was_set_never_shortens_the_freeze(api, hub_maker, sqlite_url):
    tenant, ids, node = setup(api, hub_maker, quota=None)
    config = hub_config(sqlite_url)
    memory = leasing.QuotaMemory()
    began = datetime.now(timezone.utc) - timedelta(seconds=5)    # a (slow) tick starts...
    assert api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"quota": 100}).status_code == 200
    with hub_maker.begin() as session:                       # ...the admin API sets a quota meanwhile
        set_at = session.get(Tenant, tenant["id"]).unleased_at.replace(tzinfo=timezone.utc)
    snap = snapshot(hub_maker)
    lease_round = grant(hub_maker, snap, frozenset({node}), config, began, memory)
    # the tick learns of the copies still running without a lease, stamped with its own (earlier) time
    learn(hub_maker, lease_round, snap, {node: unleased_report(node, snap, ids, 7)}, began, memory)
    with hub_maker.begin() as session:
        assert session.get(Tenant, tenant["id"]).unleased_at.replace(tzinfo=timezone.utc) == set_at
    # so nothing grows until settle_s after the quota appeared, not after the tick began
    just_before = set_at + timedelta(seconds=leasing.params_for(config).settle_s - 0.5)
    frozen = grant(hub_maker, snapshot(hub_maker), frozenset({node}), config, just_before, memory)
    assert {lease.cap for lease in frozen.for_node(node).values()} == {7}    # the counts: nothing grows


def test_a_deleted_subscriptions_lease_goes_with_its_last_holder(api, hub_maker, sqlite_url):
    tenant, ids, node = setup(api, hub_maker)
    config = hub_config(sqlite_url)
    memory = leasing.QuotaMemory()
    granted_and_counted(hub_maker, config, node, {ids[0]: 20, ids[1]: 5}, memory)
    assert api.simulate_delete(f"/v1/subscriptions/{ids[0]}").status_code == 204

    # the next tick: the node answers without it (its spawn dropped it) and the holder is released
    later = T0 + timedelta(seconds=2)
    snap = snapshot(hub_maker)
    second = grant(hub_maker, snap, frozenset({node}), config, later, memory)
    assert ids[0] in second.states                           # still counted while the node may spend it
    learn(hub_maker, second, snap, {node: report(node, snap, {ids[1]: 5}, second)}, later, memory)
    with hub_maker.begin() as session:
        stored = leases.load(session)
    assert set(stored.states) == {ids[1]}                    # no row left behind for the deleted one
    reserved = session_reserved(hub_maker, tenant["id"])
    assert reserved == stored.states[ids[1]].charge(5)       # the deleted one's charge is gone from it
    body = api.simulate_get(f"/v1/tenants/{tenant['id']}").json
    assert (body["used"], body["leased"]) == (5, reserved - 5)


def session_reserved(hub_maker, tenant_id):
    with hub_maker.begin() as session:
        return session.get(Tenant, tenant_id).reserved
