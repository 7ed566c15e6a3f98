from tests.fixtures.hub import LOCAL_WIKI


def test_create_get_list_patch_delete(api):
    created = api.simulate_post("/v1/tenants", json={"name": "acme", "quota": 10})
    assert created.status_code == 201
    tenant = created.json
    assert created.headers["location"] == f"/v1/tenants/{tenant['id']}"
    assert {k: tenant[k] for k in ("name", "quota", "used", "subscriptions")} == \
        {"name": "acme", "quota": 10, "used": 0, "subscriptions": 0}
    assert api.simulate_get(f"/v1/tenants/{tenant['id']}").json == tenant
    assert [t["id"] for t in api.simulate_get("/v1/tenants").json["items"]] == [tenant["id"]]

    patched = api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"name": "acme2", "quota": None})
    assert patched.status_code == 200
    assert (patched.json["name"], patched.json["quota"]) == ("acme2", None)

    assert api.simulate_delete(f"/v1/tenants/{tenant['id']}").status_code == 204
    assert api.simulate_get(f"/v1/tenants/{tenant['id']}").status_code == 404
    assert api.simulate_delete(f"/v1/tenants/{tenant['id']}").status_code == 404


def test_duplicate_name_is_409(api):
    api.simulate_post("/v1/tenants", json={"name": "acme"})
    other = api.simulate_post("/v1/tenants", json={"name": "other"}).json
    for resp in (api.simulate_post("/v1/tenants", json={"name": "acme"}),
                 api.simulate_patch(f"/v1/tenants/{other['id']}", json={"name": "acme"})):
        assert resp.status_code == 409
        assert resp.json["error"]["field"] == "name"


def test_used_and_count_follow_subscriptions_and_delete_cascades(api, tenant, hub_maker):
    from blackwidow.models import Subscription

    subs = api.simulate_post("/v1/subscriptions/bulk", json={
        "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "items": [{"title": "A"}, {"title": "B"}],
    }).json["items"]
    with hub_maker.begin() as session:       # what the poller writes from spawn reports
        session.get(Subscription, subs[0]["id"]).revisions = 7
        session.get(Subscription, subs[1]["id"]).revisions = 5
    got = api.simulate_get(f"/v1/tenants/{tenant['id']}").json
    assert (got["subscriptions"], got["used"]) == (2, 12)

    assert api.simulate_delete(f"/v1/tenants/{tenant['id']}").status_code == 204
    assert api.simulate_get(f"/v1/subscriptions/{subs[0]['id']}").status_code == 404


def test_validation(api, tenant):
    cases = [({"quota": 1}, "name"), ({"name": ""}, "name"), ({"name": "x" * 201}, "name"),
             ({"name": "a\x00b"}, "name"), ({"name": "a", "quota": -1}, "quota"),
             ({"name": "a", "quota": "5"}, "quota"), ({"name": "a", "id": "x"}, "id"), ({"name": 3}, "name")]
    for body, field in cases:
        resp = api.simulate_post("/v1/tenants", json=body)
        assert (resp.status_code, resp.json["error"]["field"]) == (422, field), body
    resp = api.simulate_patch(f"/v1/tenants/{tenant['id']}", json={"used": 0})
    assert (resp.status_code, resp.json["error"]["field"]) == (422, "used")


def test_pagination(api):
    ids = [api.simulate_post("/v1/tenants", json={"name": f"t{i}"}).json["id"] for i in range(5)]
    first = api.simulate_get("/v1/tenants", params={"limit": "2"}).json
    second = api.simulate_get("/v1/tenants", params={"limit": "2", "cursor": first["next_cursor"]}).json
    third = api.simulate_get("/v1/tenants", params={"limit": "2", "cursor": second["next_cursor"]}).json
    assert [t["id"] for t in first["items"] + second["items"] + third["items"]] == ids
    assert third["next_cursor"] is None
