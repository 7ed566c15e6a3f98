"""The scheduler's snapshot between ticks (blackwidow.store.changes, poller._snapshot): after any sequence of
admin API writes and tick writes, the cached snapshot refreshed through the change log equals a full read."""
import random
from datetime import datetime, timezone

from blackwidow import poller
from blackwidow.store import changes, coordination, register_node
from blackwidow.store.coordination import AssignmentView
from tests.fixtures.hub import LOCAL_WIKI

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def full(hub_maker):
    with hub_maker.begin() as session:
        return coordination.load_snapshot(session)


def refreshed(hub_maker, cached):
    with hub_maker.begin() as session:
        return poller._snapshot(session, cached)[0]


def same(a, b) -> bool:
    """Equal rows, and the kept node index (Snapshot.by_node) equal to one built afresh."""
    index = {node: ids for node, ids in a.by_node.items() if ids}
    return (a.nodes, a.subscriptions, a.assignments, index) == (b.nodes, b.subscriptions, b.assignments, b.by_node)


def tick_writes(hub_maker, cached, node, rng):
    """What a tick writes (assignments, placement, counters), applied to its snapshot as poll_once does."""
    snap = cached.snapshot
    ids = sorted(snap.subscriptions)
    placed = {sid: AssignmentView(node, True, T0) for sid in rng.sample(ids, min(3, len(ids)))}
    dropped = tuple(sid for sid in rng.sample(sorted(snap.assignments), min(1, len(snap.assignments)))
                    if sid not in placed)
    counted = {sid: {"node_id": node, "state": "running", "revisions": rng.randint(1, 50)} for sid in placed}
    with hub_maker.begin() as session:
        coordination.save_assignments(session, placed, dropped)
        coordination.update_subscriptions(session, counted, snap.subscriptions)
        changes.prune(session, cached.seq)
    coordination.apply_settlement(snap, placed, dropped, counted)


def test_the_cached_snapshot_follows_every_admin_and_tick_write(api, hub_maker):
    rng = random.Random(7)
    with hub_maker.begin() as session:
        nodes = [register_node(session, f"http://127.0.0.1:990{i}")[0].id for i in (1, 2)]
    tenants = [api.simulate_post("/v1/tenants", json={"name": f"t{i}", "quota": None}).json["id"] for i in range(3)]
    cached = refreshed(hub_maker, None)
    assert cached.snapshot.by_node == {}      # built now, kept from here on by the refreshes and tick writes
    made = 0

    def create():
        nonlocal made
        made += 3
        tenant = rng.choice(tenants)
        titles = [f"Page {made + i}" for i in range(3)]
        if rng.random() < 0.5:
            body = {"tenant_id": tenant, "wiki": LOCAL_WIKI, "items": [{"title": t} for t in titles]}
            api.simulate_post("/v1/subscriptions/bulk", json=body)
        else:
            api.simulate_post("/v1/subscriptions", json={"kind": "pages", "tenant_id": tenant, "wiki": LOCAL_WIKI,
                                                         "titles": titles})

    def some_subscription():
        subs = sorted(full(hub_maker).subscriptions)
        return rng.choice(subs) if subs else None

    def patch():
        sid = some_subscription()
        if sid:
            body = rng.choice([{"enabled": False}, {"enabled": True}, {"quota": rng.randint(0, 9)}, {"content": True}])
            assert api.simulate_patch(f"/v1/subscriptions/{sid}", json=body).status_code == 200

    def delete():
        sid = some_subscription()
        if sid:
            assert api.simulate_delete(f"/v1/subscriptions/{sid}").status_code == 204

    def delete_tenant():
        if len(tenants) > 1:
            assert api.simulate_delete(f"/v1/tenants/{tenants.pop(0)}").status_code == 204

    operations = [create, create, patch, patch, delete, delete_tenant,
                  lambda: tick_writes(hub_maker, cached, rng.choice(nodes), rng)]
    for step in range(60):
        rng.choice(operations)()
        cached = refreshed(hub_maker, cached)
        assert same(cached.snapshot, full(hub_maker)), f"step {step}"
    assert len(cached.snapshot.subscriptions) > 10


def test_a_refresh_reads_only_the_rows_noted_since(api, hub_maker):
    tenant = api.simulate_post("/v1/tenants", json={"name": "t", "quota": None}).json["id"]
    api.simulate_post("/v1/subscriptions/bulk", json={"tenant_id": tenant, "wiki": LOCAL_WIKI,
                                                      "items": [{"title": f"P{i}"} for i in range(5)]})
    cached = refreshed(hub_maker, None)
    sid = sorted(cached.snapshot.subscriptions)[0]
    api.simulate_patch(f"/v1/subscriptions/{sid}", json={"quota": 3})
    with hub_maker.begin() as session:
        assert changes.since(session, cached.seq, changes.head(session)) == {sid}
    after = refreshed(hub_maker, cached)
    assert after.snapshot.subscriptions[sid].spec.quota == 3 and after.seq == cached.seq + 1
