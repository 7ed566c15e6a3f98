"""blackwidow.store.identities on SQLite (tests/integration/test_identities_postgres.py runs the same on
PostgreSQL): one read for the tick, holds written ahead and extended, pauses and refusals from reports,
and what a tick does with them."""
from blackwidow.models import Identity, IdentityWindow, Subscription, Tenant
from blackwidow.store import identities as store
from blackwidow.upstream.allocate import Demand, Params, allocate
from blackwidow.upstream.limits import binding_rate, default_limits
from blackwidow.upstream.slots import violations
from shared.hashing import source_uuid
from shared.wire import IdentityUse

NOW = 2_000_000_000.0
ENWIKI = "https://en.wikipedia.org/w/api.php"
LOCAL = "http://127.0.0.1:8780/api.php"
P = Params()


def _seed(session) -> tuple[str, str]:
    session.add_all([Tenant(id="t-1", name="one", weight=1.0), Tenant(id="t-2", name="two", weight=3.0)])
    session.flush()
    session.add_all(Subscription(id=f"s-{i}", tenant_id=tenant, wiki=wiki, title=title,
                                 source_uuid=str(source_uuid(wiki, title)))
                    for i, (tenant, wiki, title) in enumerate([("t-1", ENWIKI, "A"), ("t-2", ENWIKI, "A"),
                                                               ("t-1", LOCAL, "B")]))
    session.flush()
    return "t-1", "t-2"


REPORTED = {"en.wikipedia.org", "127.0.0.1:8780"}


def _tick(session, demand, now):
    """What the scheduler does each tick for every identity: load, allocate, write ahead."""
    snap = store.load(session, REPORTED)
    plans = {i: allocate(state, demand, snap.weights, now, P) for i, state in snap.identities.items()}
    store.save(session, snap, plans)
    return plans


def check_store(maker) -> None:
    with maker.begin() as session:
        _seed(session)
    with maker.begin() as session:
        # identities come from rows and from what nodes report using, never from a scan of the subscriptions
        assert store.load(session).identities == {}
        snap = store.load(session, REPORTED)
        assert set(snap.identities) == {"en.wikipedia.org", "127.0.0.1:8780"}
        assert snap.identities["en.wikipedia.org"].limits == default_limits("en.wikipedia.org")
        assert snap.stored == frozenset() and snap.weights == {"t-1": 1.0, "t-2": 3.0}
        assert store.identity_of(ENWIKI) == "en.wikipedia.org"

    demand = {"node-a": Demand(backfill={"t-1": 1}), "node-b": Demand(fresh={"t-2": 1})}
    with maker.begin() as session:
        plans = _tick(session, demand, NOW)
    budgets = plans["en.wikipedia.org"].budgets
    assert [w.start for w in budgets["node-b"].windows] == [NOW]          # freshness first
    assert budgets["node-a"].windows == ()
    assert budgets["node-b"].weights == {"t-2": 1.0} and budgets["node-a"].weights == {"t-1": 1.0}

    # the next ticks: node-b's hold is extended in place; the row created on the first write keeps it
    for k in range(1, 8):
        with maker.begin() as session:
            plans = _tick(session, demand, NOW + 2 * k)
    with maker.begin() as session:
        rows = session.query(IdentityWindow).filter_by(identity_id="en.wikipedia.org").all()
        holds = [store._hold(r) for r in rows]
        assert violations(holds, 1, binding_rate(default_limits("en.wikipedia.org")), P.handover_s) == []
        assert {r.node_id for r in rows} <= {"node-a", "node-b"}
        assert session.get(Identity, "en.wikipedia.org").gen == 8
        assert store.load(session, REPORTED).identities["en.wikipedia.org"].gen == 8

    # node-b gives its slot back: its running hold ends at the tick's now, the row is cut in place
    with maker.begin() as session:
        _tick(session, {"node-a": Demand(), "node-b": Demand(released_gen=8)}, NOW + 15)
    with maker.begin() as session:
        rows = session.query(IdentityWindow).filter_by(identity_id="en.wikipedia.org", node_id="node-b").all()
        assert max(r.end_s for r in rows) == NOW + 15

    # a node saw a 429: every node's next budget pauses, each with its own jitter
    with maker.begin() as session:
        changed = store.record_use(session, "node-a", {"en.wikipedia.org": IdentityUse(
            paused_until=NOW + 60, pause_reason="429 Retry-After 44")}, now=NOW + 16, skew_s=0.5)
        assert changed == {"en.wikipedia.org"}
        assert store.record_use(session, "node-b", {"en.wikipedia.org": IdentityUse(
            paused_until=NOW + 30, pause_reason="maxlag")}, now=NOW + 16, skew_s=0.5) == set()
        store.record_use(session, "node-b", {"127.0.0.1:8780": IdentityUse(auth_error="Wrong password")},
                         now=NOW + 16, skew_s=0.5)
    with maker.begin() as session:
        plans = _tick(session, demand, NOW + 18)
        budgets = plans["en.wikipedia.org"].budgets
        assert {b.paused_until for b in budgets.values()} != {NOW + 60.5}
        assert all(NOW + 60.5 <= b.paused_until < NOW + 60.5 + P.pause_jitter_s for b in budgets.values())
        assert all(h.start >= NOW + 60.5 for h in plans["en.wikipedia.org"].writes)
        view = store.get_identity(session, "127.0.0.1:8780", now=NOW + 18)
        assert (view.auth_error, view.auth_error_node, view.configured) == ("Wrong password", "node-b", True)
        assert store.get_identity(session, "en.wikipedia.org", now=NOW + 18).pause_reason == "429 Retry-After 44"

    # a cycle later every hold that ended is dropped
    with maker.begin() as session:
        _tick(session, {}, NOW + 90 + P.cycle_s + 3 * P.window_s)         # past the pause and the holds after it
        assert session.query(IdentityWindow).count() == 0


def test_store(hub_maker):
    check_store(hub_maker)


def test_a_credential_change_clears_the_refusal_and_put_fills_defaults(hub_maker):
    with hub_maker.begin() as session:
        store.record_use(session, "n", {"en.wikipedia.org": IdentityUse(auth_error="bad")}, now=NOW, skew_s=0.5)
        assert store.put_identity(session, "en.wikipedia.org", {"credential": "bot"}) is False
        view = store.get_identity(session, "en.wikipedia.org", now=NOW)
        assert view.auth_error is None and view.limits == default_limits("en.wikipedia.org", "bot")
        store.patch_identity(session, "en.wikipedia.org", {"per_s": 2.0})
        assert store.get_identity(session, "en.wikipedia.org", now=NOW).limits.per_s == 2.0
