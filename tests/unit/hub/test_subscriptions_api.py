from blackwidow.models import Subscription
from shared.hashing import source_uuid
from tests.fixtures.hub import ENWIKI, LOCAL_WIKI

FIELDS = {"id", "tenant_id", "wiki", "title", "source_uuid", "page_key", "quota", "content", "enabled", "state",
          "node", "revisions", "last_rev_id", "last_error", "complete", "settled", "watermark", "created_at",
          "updated_at"}


def add(api, tenant, title, **extra):
    return api.simulate_post("/v1/subscriptions",
                             json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "title": title, **extra})


def test_create_returns_the_canonical_subscription(api, tenant):
    resp = api.simulate_post("/v1/subscriptions", json={
        "tenant_id": tenant["id"], "wiki": "HTTP://127.0.0.1:8780/api.php", "title": "main_page", "quota": 3,
        "content": True})
    assert resp.status_code == 201
    sub = resp.json
    assert set(sub) == FIELDS
    assert (sub["wiki"], sub["title"], sub["quota"], sub["content"]) == (LOCAL_WIKI, "main page", 3, True)
    assert sub["source_uuid"] == str(source_uuid(LOCAL_WIKI, "main page"))
    assert (sub["state"], sub["node"], sub["enabled"], sub["revisions"]) == ("pending", None, True, 0)
    assert sub["page_key"] is None              # until a spawn resolved the title
    assert resp.headers["location"] == f"/v1/subscriptions/{sub['id']}"
    assert api.simulate_get(f"/v1/subscriptions/{sub['id']}").json == sub


def test_same_article_twice_is_409_but_other_tenants_share_the_source(api, tenant):
    first = add(api, tenant, "Main Page").json
    again = add(api, tenant, "Main_Page")
    assert (again.status_code, again.json["error"]["field"]) == (409, "title")
    other = api.simulate_post("/v1/tenants", json={"name": "other"}).json
    theirs = add(api, other, "Main Page").json
    assert theirs["source_uuid"] == first["source_uuid"] and theirs["id"] != first["id"]


def test_titles_are_kept_as_typed_and_two_spellings_are_two_subscriptions(api, tenant):
    lower = add(api, tenant, " synthetic_article 1 ").json
    assert lower["title"] == "synthetic article 1"                    # what the wiki, dashboard and CLI see
    assert lower["source_uuid"] == str(source_uuid(LOCAL_WIKI, "synthetic article 1"))
    # on a wiki without first-letter capitals these are two pages; where they are one, the spawn's page key
    # gives both one fetcher, so the hub need not guess which wiki does what
    upper = add(api, tenant, "Synthetic article 1")
    assert upper.status_code == 201 and upper.json["source_uuid"] != lower["source_uuid"]
    assert add(api, tenant, "synthetic article 1").status_code == 409   # the same spelling twice


def test_page_key_is_read_only(api, tenant):
    sub = add(api, tenant, "Main Page").json
    resp = api.simulate_patch(f"/v1/subscriptions/{sub['id']}", json={"page_key": sub["source_uuid"]})
    assert (resp.status_code, resp.json["error"]["field"]) == (422, "page_key")


def test_unknown_tenant_is_422(api):
    resp = api.simulate_post("/v1/subscriptions", json={
        "tenant_id": "1b4e28ba-2fa1-41d2-883f-0016d3cca427", "wiki": LOCAL_WIKI, "title": "A"})
    assert (resp.status_code, resp.json["error"]["field"]) == (422, "tenant_id")


def test_refused_inputs_name_the_field(api, tenant):
    cases = [({"wiki": "http://169.254.169.254/api.php"}, "wiki"),
             ({"wiki": "http://127.0.0.1/api.php"}, "wiki"),
             ({"wiki": "https://example.org/w/api.php"}, "wiki"), ({"title": "a" * 256}, "title"),
             ({"title": ""}, "title"), ({"title": "a[b]"}, "title"), ({"quota": -5}, "quota"),
             ({"content": 1}, "content"), ({"node": "x"}, "node"), ({"tenant_id": 7}, "tenant_id")]
    for extra, field in cases:
        body = {"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "title": "T", **extra}
        resp = api.simulate_post("/v1/subscriptions", json=body)
        assert (resp.status_code, resp.json["error"]["field"]) == (422, field), extra


def test_bulk_is_all_or_nothing(api, tenant):
    add(api, tenant, "Exists")
    other = api.simulate_post("/v1/tenants", json={"name": "other"}).json
    defaults = {"tenant_id": tenant["id"], "wiki": LOCAL_WIKI}
    resp = api.simulate_post("/v1/subscriptions/bulk", json={**defaults, "items": [
        {"title": "New"}, {"title": "Exists"}, {"title": "Twice"}, {"title": " Twice_"},
        {"title": "Elsewhere", "tenant_id": other["id"], "wiki": ENWIKI},
        {"title": "Ghost", "tenant_id": "1b4e28ba-2fa1-41d2-883f-0016d3cca427"}]})
    assert resp.status_code == 422
    assert [(e["index"], e["code"], e["field"]) for e in resp.json["error"]["items"]] == [
        (1, "conflict", "title"), (3, "conflict", "title"), (5, "invalid", "tenant_id")]
    listed = api.simulate_get("/v1/subscriptions").json["items"]
    assert [s["title"] for s in listed] == ["Exists"]        # nothing of the refused batch was created

    ok = api.simulate_post("/v1/subscriptions/bulk", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI,
                                                           "content": True, "items": [
        {"title": f"Page {i}"} for i in range(50)]})
    assert ok.status_code == 201 and ok.json["count"] == 50
    assert all(s["content"] and s["state"] == "pending" for s in ok.json["items"])


def test_patch_disable_enable_quota_content(api, tenant, hub_maker):
    sub = add(api, tenant, "A").json
    url = f"/v1/subscriptions/{sub['id']}"
    disabled = api.simulate_patch(url, json={"enabled": False}).json
    assert (disabled["enabled"], disabled["state"]) == (False, "disabled")
    enabled = api.simulate_patch(url, json={"enabled": True}).json
    assert (enabled["enabled"], enabled["state"]) == (True, "pending")

    with hub_maker.begin() as session:         # as the poller records a spawn's report
        row = session.get(Subscription, sub["id"])
        row.state, row.revisions, row.quota = "limit_reached", 10, 10
    still = api.simulate_patch(url, json={"quota": 10}).json
    assert still["state"] == "limit_reached"
    raised = api.simulate_patch(url, json={"quota": 20, "content": True}).json
    assert (raised["state"], raised["quota"], raised["content"]) == ("pending", 20, True)
    assert raised["updated_at"] >= sub["updated_at"]

    for body, field in (({"state": "running"}, "state"), ({"enabled": "no"}, "enabled"),
                        ({"quota": -1}, "quota"), ({"title": "B"}, "title")):
        resp = api.simulate_patch(url, json=body)
        assert (resp.status_code, resp.json["error"]["field"]) == (422, field)


def test_delete(api, tenant):
    sub = add(api, tenant, "A").json
    assert api.simulate_delete(f"/v1/subscriptions/{sub['id']}").status_code == 204
    assert api.simulate_get(f"/v1/subscriptions/{sub['id']}").status_code == 404
    assert api.simulate_delete(f"/v1/subscriptions/{sub['id']}").status_code == 404
    assert add(api, tenant, "A").status_code == 201      # can subscribe again


def test_list_filters_and_pagination_are_stable(api, tenant, hub_maker):
    other = api.simulate_post("/v1/tenants", json={"name": "other"}).json
    mine = api.simulate_post("/v1/subscriptions/bulk", json={
        "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "items": [{"title": f"P{i}"} for i in range(7)]}).json
    add(api, other, "Theirs")
    ids = [s["id"] for s in mine["items"]]
    api.simulate_patch(f"/v1/subscriptions/{ids[2]}", json={"enabled": False})

    def page(cursor):
        params = {"tenant_id": tenant["id"], "limit": "3", **({"cursor": cursor} if cursor else {})}
        return api.simulate_get("/v1/subscriptions", params=params).json

    first = page(None)
    assert [s["id"] for s in first["items"]] == ids[:3]
    # rows removed or added between pages make the rest neither repeat nor skip
    api.simulate_delete(f"/v1/subscriptions/{ids[1]}")
    late = add(api, tenant, "Late").json
    second = page(first["next_cursor"])
    third = page(second["next_cursor"])
    assert [s["id"] for s in second["items"] + third["items"]] == ids[3:] + [late["id"]]
    assert third["next_cursor"] is None

    disabled = api.simulate_get("/v1/subscriptions", params={"state": "disabled"}).json["items"]
    assert [s["id"] for s in disabled] == [ids[2]]
    node_id = "c6de1848-1b12-52ff-adc1-2da5428ec870"
    with hub_maker.begin() as session:
        session.get(Subscription, ids[3]).node_id = node_id
    on_node = api.simulate_get("/v1/subscriptions", params={"node": node_id}).json
    assert [s["id"] for s in on_node["items"]] == [ids[3]]


def test_bad_list_queries(api):
    for params, field in (({"limit": "0"}, "limit"), ({"limit": "abc"}, "limit"),
                          ({"state": "sleepy"}, "state"),
                          ({"cursor": "garbage!"}, "cursor"), ({"cursor": "WzEsMl0"}, "cursor"),
                          ({"tenant_id": "x"}, "tenant_id"), ({"page": "2"}, "page")):
        resp = api.simulate_get("/v1/subscriptions", params=params)
        assert (resp.status_code, resp.json["error"]["field"]) == (422, field), params
