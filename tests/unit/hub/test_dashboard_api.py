"""GET /v1/dashboard (admin token) over a seeded store, and the public static page it feeds."""
import pytest
from falcon.testing import TestClient
from openapi_schema_validator import OAS30Validator

from blackwidow.models import utcnow
from blackwidow.openapi import document
from tests.fixtures import dashboard
from tests.fixtures.hub import NODE


@pytest.fixture
def seeded(api, hub_maker):
    return dashboard.seed(dashboard.client_post(api), hub_maker, utcnow())


def test_needs_the_admin_token(api):
    assert api.simulate_get("/v1/dashboard", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert api.simulate_get("/v1/dashboard", headers=NODE).status_code == 401


def test_an_empty_hub(api):
    doc = api.simulate_get("/v1/dashboard").json
    assert doc["nodes"] == [] and doc["reloads"] == []
    assert doc["subscriptions"] == {"total": 0, "revisions": 0, "state": None, "recent": [],
                                    "by_state": dict.fromkeys(dashboard.STATE_COUNTS, 0)}
    assert doc["tenants"] == {"total": 0, "items": []}


def test_counts_nodes_tenants_and_reloads(api, seeded):
    resp = api.simulate_get("/v1/dashboard")
    assert resp.status_code == 200 and resp.headers["cache-control"] == "no-store"
    doc = resp.json
    spec = document()
    OAS30Validator({**spec["components"]["schemas"]["Dashboard"], "components": spec["components"]}).validate(doc)

    dashboard.check_document(doc)


def test_state_filter_narrows_only_the_recent_list(api, seeded):
    doc = api.simulate_get("/v1/dashboard", params={"state": "running"}).json
    assert doc["subscriptions"]["state"] == "running"
    assert [s["state"] for s in doc["subscriptions"]["recent"]] == ["running", "running"]
    assert doc["subscriptions"]["total"] == 8
    for params, field in (({"state": "sleeping"}, "state"), ({"limit": "5"}, "limit")):
        resp = api.simulate_get("/v1/dashboard", params=params)
        assert (resp.status_code, resp.json["error"]["field"]) == (422, field)


def test_page_and_assets_are_public_and_locked_down(api):
    anonymous = TestClient(api.app)
    root = anonymous.simulate_get("/")
    assert (root.status_code, root.headers["location"]) == (302, "/dashboard")

    page = anonymous.simulate_get("/dashboard")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/dashboard/dashboard.js" defer>' in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert page.headers["referrer-policy"] == "no-referrer"

    script = anonymous.simulate_get("/dashboard/dashboard.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in script.text and "Authorization" in script.text
    assert anonymous.simulate_get("/dashboard/dashboard.css").headers["content-type"].startswith("text/css")
    missing = anonymous.simulate_get("/dashboard/app.py")
    assert missing.status_code == 404 and missing.json["error"]["field"] == "name"
    assert anonymous.simulate_get("/dashboard/..%2Fapp.py").status_code == 404
