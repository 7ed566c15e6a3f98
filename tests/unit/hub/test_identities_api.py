"""/v1/identities (admin token) and tenant weights: limits, credential names, validation, what is shown."""
import pytest
from openapi_schema_validator import OAS30Validator

from blackwidow.openapi import document
from blackwidow.store import identities as store
from blackwidow.upstream.allocate import Plan
from blackwidow.upstream.slots import Hold
from tests.fixtures.hub import ENWIKI, LOCAL_WIKI, NODE


def _check(name: str, value) -> None:
    spec = document()
    OAS30Validator({**spec["components"]["schemas"][name], "components": spec["components"]}).validate(value)


def _subscribe(api, tenant, wiki, title="A"):
    resp = api.simulate_post("/v1/subscriptions", json={"tenant_id": tenant["id"], "wiki": wiki, "title": title})
    assert resp.status_code == 201, resp.json


def test_needs_the_admin_token(api):
    for resp in (api.simulate_get("/v1/identities", headers=NODE),
                 api.simulate_get("/v1/identities/en.wikipedia.org", headers={"Authorization": "Bearer x"})):
        assert resp.status_code == 401


def test_a_subscribed_wiki_shows_its_default_limits_until_configured(api, tenant):
    assert api.simulate_get("/v1/identities").json == {"items": []}
    _subscribe(api, tenant, LOCAL_WIKI)
    _subscribe(api, tenant, ENWIKI)
    _subscribe(api, tenant, ENWIKI, "B")
    doc = api.simulate_get("/v1/identities").json
    _check("IdentityList", doc)
    shown = {i["id"]: (i["in_flight"], i["per_s"], i["per_min"], i["configured"], i["subscriptions"])
             for i in doc["items"]}
    assert shown == {"127.0.0.1:8780": (1, 5.0, 200, False, 1), "en.wikipedia.org": (1, 5.0, 200, False, 2)}
    one = api.simulate_get("/v1/identities/en.wikipedia.org").json
    assert one["rate_per_s"] == pytest.approx(200 / 60 * 0.98)
    assert (one["credential"], one["windows"], one["paused_until"], one["auth_error"]) == (None, [], None, None)
    assert api.simulate_get("/v1/identities/de.wikipedia.org").status_code == 404


def test_put_sets_every_limit_with_the_defaults_of_its_credential(api):
    created = api.simulate_put("/v1/identities/en.wikipedia.org", json={"credential": "harvest-bot"})
    assert created.status_code == 201
    _check("Identity", created.json)
    body = created.json
    assert (body["credential"], body["in_flight"], body["per_s"], body["per_min"], body["configured"]) == \
        ("harvest-bot", 3, 10.0, 2000, True)
    again = api.simulate_put("/v1/identities/en.wikipedia.org", json={"per_s": 4})
    assert again.status_code == 200
    assert (again.json["credential"], again.json["in_flight"], again.json["per_s"], again.json["per_min"]) == \
        (None, 1, 4.0, 200)
    assert again.json["gen"] > body["gen"]


def test_patch_changes_only_what_it_names(api):
    api.simulate_put("/v1/identities/127.0.0.1:8780", json={})
    patched = api.simulate_patch("/v1/identities/127.0.0.1:8780", json={"in_flight": 4, "per_min": 600})
    assert patched.status_code == 200
    got = api.simulate_get("/v1/identities/127.0.0.1:8780").json
    assert (got["in_flight"], got["per_s"], got["per_min"], got["maxlag"]) == (4, 5.0, 600, 5)
    assert got == patched.json


@pytest.mark.parametrize("body, field", [
    ({"in_flight": 0}, "in_flight"), ({"in_flight": -1}, "in_flight"), ({"per_s": 0}, "per_s"),
    ({"per_s": -2.5}, "per_s"), ({"per_min": 0}, "per_min"), ({"slow_after_s": 0}, "slow_after_s"),
    ({"slow_wait_s": -1}, "slow_wait_s"), ({"maxlag": 0}, "maxlag"), ({"in_flight": True}, "in_flight"),
    ({"in_flight": 1.5}, "in_flight"), ({"per_s": "5"}, "per_s"), ({"in_flight": None}, "in_flight"),
    ({"credential": "hunter2 secret"}, "credential"), ({"credential": "x" * 65}, "credential"),
    ({"credential": ""}, "credential"), ({"credential": 5}, "credential"), ({"password": "x"}, "password"),
    ({"paused_until": 5}, "paused_until"),
])
def test_bad_limits_are_refused_naming_the_field(api, body, field):
    for method in (api.simulate_put, api.simulate_patch):
        resp = method("/v1/identities/en.wikipedia.org", json=body)
        if method is api.simulate_put and field == "paused_until":
            field_expected = "paused_until"      # not a PUT field at all
        else:
            field_expected = field
        assert (resp.status_code, resp.json["error"]["field"]) == (422, field_expected), (method, body)
        _check("Error", resp.json)


@pytest.mark.parametrize("identity_id", ["evil.example.org", "169.254.169.254", "127.0.0.1:9999", "localhost",
                                         "en.wikipedia.org:8443", "u@en.wikipedia.org", "a b",
                                         "en.wikipedia.org.evil.net", "[::1]"])
def test_a_host_the_wiki_policy_does_not_allow_is_refused(api, identity_id):
    resp = api.simulate_put(f"/v1/identities/{identity_id}", json={})
    assert (resp.status_code, resp.json["error"]["field"]) == (422, "identity_id")
    assert api.simulate_get("/v1/identities").json == {"items": []}


def test_windows_pauses_and_refusals_are_shown(api, hub_maker, tenant):
    _subscribe(api, tenant, ENWIKI)
    now = 2_000_000_000.0
    with hub_maker.begin() as session:
        snap = store.load(session, {"en.wikipedia.org"})          # a node reported using it
        hold = Hold(0, "0b7f4c9e-0000-5000-8000-000000000001", now - 5, now + 10, 3.0, 1)
        store.save(session, snap, {"en.wikipedia.org": Plan(1, (hold,), (), {}, {})})
    resource = api.app._router.find("/v1/identities")[0]
    resource._clock = lambda: now
    got = api.simulate_get("/v1/identities/en.wikipedia.org").json
    assert (got["configured"], got["in_use"], got["gen"]) == (True, 1, 1)
    assert got["windows"] == [{"node": hold.node, "slot": 0, "start": "2033-05-18T03:33:15Z",
                               "end": "2033-05-18T03:33:30Z", "rate_per_s": 3.0}]
    _check("Identity", got)
    lifted = api.simulate_patch("/v1/identities/en.wikipedia.org", json={"paused_until": None})
    assert lifted.status_code == 200 and lifted.json["paused_until"] is None


def test_tenant_weight(api, tenant):
    assert tenant["weight"] == 1.0
    _check("Tenant", tenant)
    patched = api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"weight": 2.5, "quota": 5})
    assert (patched.status_code, patched.json["weight"], patched.json["quota"]) == (200, 2.5, 5)
    assert api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"weight": 3}).json["weight"] == 3.0
    for bad in (0, -1, "2", True, None, 1e9):
        resp = api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"weight": bad})
        assert (resp.status_code, resp.json["error"]["field"]) == (422, "weight"), bad
    assert api.simulate_get(f"/v1/tenants/{tenant['id']}").json["weight"] == 3.0


def test_the_dashboard_shows_identities_with_their_use(api, hub_maker, tenant):
    _subscribe(api, tenant, ENWIKI)
    api.simulate_patch("/v1/identities/en.wikipedia.org", json={"credential": "bot"})
    with hub_maker.begin() as session:
        snap = store.load(session)
        far = 4_000_000_000.0          # still held whenever the test runs
        store.save(session, snap, {"en.wikipedia.org": Plan(9, (Hold(0, "node-x", far - 30, far, 2.0, 9),), (),
                                                            {}, {})})
    doc = api.simulate_get("/v1/dashboard").json
    _check("Dashboard", doc)
    (shown,) = doc["identities"]
    assert (shown["id"], shown["credential"], shown["in_flight"], shown["in_use"]) == \
        ("en.wikipedia.org", "bot", 1, 0)
    assert [(w["node"], w["slot"]) for w in shown["windows"]] == [("node-x", 0)]
