"""The hub's store and admin API on real PostgreSQL: migrations match the models, the API round trip,
and a duplicate created concurrently by two transactions ends as a 409 rather than a 500."""
import threading

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from blackwidow import store, title_lists, validation
from blackwidow.models import SchedulerEpoch, Subscription, utcnow
from blackwidow.store import coordination
from shared.errors import Conflict
from tests.fixtures.hub import LOCAL_WIKI, NODE, api_client, hub_config
# a migrated schema of its own, and clean tables per test
from tests.integration.coordination_support import db_url, maker  # noqa: F401
from tests.unit.hub.test_migrations import schema_drift

pytestmark = pytest.mark.integration


def test_migrations_match_the_models(db_url):  # noqa: F811
    assert schema_drift(db_url) == []


def test_api_round_trip(db_url, maker):  # noqa: F811
    api = api_client(hub_config(db_url), maker)
    assert api.simulate_get("/health").json["scheduler"] == "absent"          # no scheduler ran here
    with maker.begin() as session:          # the row a leading scheduler keeps, in PostgreSQL's timestamptz
        session.add(SchedulerEpoch(name="scheduler", epoch=1, holder="pg-test", last_tick_at=utcnow()))
    health = api.simulate_get("/health")
    assert (health.status_code, health.json["status"]) == (200, "ok"), health.json
    tenant = api.simulate_post("/v1/tenants", json={"name": "pg-acme", "quota": 500}).json
    assert api.simulate_post("/v1/tenants", json={"name": "pg-acme"}).status_code == 409

    one = api.simulate_post("/v1/subscriptions", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI,
                                                       "title": "main_page", "quota": 5})
    assert one.status_code == 201 and one.json["title"] == "main page"          # as typed, '_' as space
    assert api.simulate_post("/v1/subscriptions", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI,
                                                        "title": " main page"}).status_code == 409
    defaults = {"tenant_id": tenant["id"], "wiki": LOCAL_WIKI}
    bulk = api.simulate_post("/v1/subscriptions/bulk",
                             json={**defaults, "items": [{"title": f"Page {i}"} for i in range(25)]})
    assert bulk.status_code == 201 and bulk.json["count"] == 25
    refused = api.simulate_post("/v1/subscriptions/bulk",
                                json={**defaults, "items": [{"title": "Fresh"}, {"title": "Page 3"}]})
    assert [e["index"] for e in refused.json["error"]["items"]] == [1]

    ids, cursor = [], None
    while True:
        page = api.simulate_get("/v1/subscriptions", params={"tenant_id": tenant["id"], "limit": "10",
                                                             **({"cursor": cursor} if cursor else {})}).json
        ids += [s["id"] for s in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert ids == [one.json["id"]] + [s["id"] for s in bulk.json["items"]]

    patched = api.simulate_patch(f"/v1/subscriptions/{ids[1]}", json={"enabled": False, "quota": None}).json
    assert (patched["state"], patched["quota"]) == ("disabled", None)
    assert patched["updated_at"].endswith("Z")
    disabled = api.simulate_get("/v1/subscriptions", params={"state": "disabled"}).json["items"]
    assert [s["id"] for s in disabled] == [ids[1]]

    spawn = {"url": "http://127.0.0.1:8701"}
    node = api.simulate_post("/v1/nodes", json=spawn, headers=NODE)
    assert node.status_code == 201
    assert api.simulate_post("/v1/nodes", json=spawn, headers=NODE).status_code == 200
    assert [n["id"] for n in api.simulate_get("/v1/nodes").json["items"]] == [node.json["id"]]

    got = api.simulate_get(f"/v1/tenants/{tenant['id']}").json
    assert (got["subscriptions"], got["used"]) == (26, 0)
    assert api.simulate_delete(f"/v1/tenants/{tenant['id']}").status_code == 204
    with maker() as session:
        assert session.query(Subscription).count() == 0


def _race(maker, create) -> str:
    """`create(session)` in a first transaction, flushed but not committed, then in a second one: what
    the second ends in once the first commits ("created", or the Conflict's status)."""
    first = maker()
    create(first)                                  # flushed, not yet committed: holds the unique key
    outcome = {}

    def second():
        with maker() as session:
            try:
                create(session)                    # blocks on the unique index until `first` ends
                outcome["result"] = "created"
            except Conflict as exc:
                outcome["result"] = exc.status

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive()                          # waiting on the first transaction
    first.commit()
    first.close()
    thread.join(10)
    return outcome["result"]


def test_concurrent_duplicate_is_a_conflict(maker):  # noqa: F811
    with maker.begin() as session:
        tenant = store.create_tenant(session, name="race")
    new = validation.parse_subscription({"tenant_id": tenant.id, "wiki": LOCAL_WIKI, "title": "Race"},
                                        (hub_config("sqlite://").wiki_allowlist))
    assert _race(maker, lambda session: store.create_subscription(session, new)) == "409 Conflict"


def test_concurrent_lists_sharing_a_title_end_in_a_conflict_then_a_report(maker):  # noqa: F811
    """Two `pages` calls racing on one title: the second waits, then creates nothing (409); sent again, it
    reports that title as already subscribed and creates the rest."""
    with maker.begin() as session:
        tenant = store.create_tenant(session, name="race-list")
    allow = hub_config("sqlite://").wiki_allowlist

    def request(*titles):
        return title_lists.parse_pages({"kind": "pages", "tenant_id": tenant.id, "wiki": LOCAL_WIKI,
                                        "titles": list(titles)}, allow)

    calls = iter([request("Shared", "Mine"), request("Theirs", "Shared")])
    assert _race(maker, lambda session: store.create_pages(session, next(calls))) == "409 Conflict"
    with maker.begin() as session:
        again = store.create_pages(session, request("Theirs", "shared"))
    assert [(c["index"], c["title"]) for c in again["created"]] == [(0, "Theirs")]
    assert [(r["index"], r["reason"]) for r in again["refused"]] == [(1, "already_subscribed")]


def test_the_ticks_row_locks_hold_off_deletes_not_admin_updates(db_url, maker):  # noqa: F811
    """The tick's lock on the subscriptions it writes (store.lock_existing_subscriptions) keeps a delete from
    stranding an assignment row, and lets a PATCH of the same rows through while the tick's transaction runs."""
    api = api_client(hub_config(db_url), maker)
    tenant = api.simulate_post("/v1/tenants", json={"name": "pg-locks", "quota": None}).json
    ids = [api.simulate_post("/v1/subscriptions", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI,
                                                        "title": f"Locked {i}"}).json["id"] for i in range(2)]
    with maker.begin() as tick:
        assert coordination.lock_existing_subscriptions(tick, ids) == set(ids)
        with maker.begin() as admin:
            admin.execute(sa.text("SET LOCAL lock_timeout = '2s'"))
            admin.execute(sa.update(Subscription).where(Subscription.id == ids[0]).values(quota=9))
        with pytest.raises(OperationalError, match="lock timeout"):
            with maker.begin() as admin:
                admin.execute(sa.text("SET LOCAL lock_timeout = '500ms'"))
                admin.execute(sa.delete(Subscription).where(Subscription.id == ids[1]))
    with maker.begin() as session:
        rows = {s.id: s.quota for s in session.scalars(sa.select(Subscription))}
    assert rows == {ids[0]: 9, ids[1]: None}
