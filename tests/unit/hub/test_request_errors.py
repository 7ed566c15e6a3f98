"""Request-level refusals: every one is a 4xx JSON error naming the field (or null), never a 5xx."""
import json

import pytest

from tests.fixtures.hub import ADMIN, LOCAL_WIKI, api_client, hub_config

JSON = {**ADMIN, "Content-Type": "application/json"}


def error(resp, status: int):
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    assert set(resp.json["error"]) >= {"code", "message", "field"}
    return resp.json["error"]


@pytest.mark.parametrize("body", [b"{", b"[1,", b"nul", b"{\"name\": NaN}", b"{\"a\":1,\"a\":2}", b"", b"   ",
                                  b"[" * 100000, b"\"just a string\""])
def test_malformed_json_is_400_or_422(api, body):
    resp = api.simulate_post("/v1/tenants", body=body, headers=JSON)
    assert resp.status_code in (400, 422)
    assert error(resp, resp.status_code)["field"] is None


def test_invalid_utf8_and_lone_surrogates_are_400(api):
    resp = api.simulate_post("/v1/tenants", body=b'{"name": "\xff"}', headers=JSON)
    assert error(resp, 400)["field"] is None
    assert error(api.simulate_post("/v1/tenants", body=b'{"name": "\\udc80"}', headers=JSON), 400)
    assert error(api.simulate_post("/v1/tenants", body=b'{"\\ud800": 1}', headers=JSON), 400)


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None,
                                   "application/json; charset=latin-1"])
def test_wrong_content_type_is_415(api, ctype):
    headers = {**ADMIN, **({"Content-Type": ctype} if ctype else {})}
    assert error(api.simulate_post("/v1/tenants", body=b'{"name": "a"}', headers=headers), 415)


def test_json_with_charset_is_fine(api):
    resp = api.simulate_post("/v1/tenants", body=b'{"name": "a"}',
                             headers={**ADMIN, "Content-Type": "application/json; charset=utf-8"})
    assert resp.status_code == 201


def test_body_over_the_limit_is_413(sqlite_url, hub_maker):
    api = api_client(hub_config(sqlite_url, BW_MAX_BODY_BYTES="64"), hub_maker)
    big = json.dumps({"name": "x" * 100}).encode()
    assert error(api.simulate_post("/v1/tenants", body=big, headers=JSON), 413)
    assert api.simulate_post("/v1/tenants", json={"name": "small"}).status_code == 201


def test_auth(api):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "test-admin-token"},
                    {"Authorization": "Basic dGVzdA=="}, {"Authorization": "Bearer test-node-secret"}):
        resp = api.simulate_get("/v1/tenants", headers={"Authorization": "", **headers})
        assert error(resp, 401)
    # refused before the body is looked at
    no_auth = {"Content-Type": "application/json", "Authorization": ""}
    assert error(api.simulate_post("/v1/tenants", body=b"{", headers=no_auth), 401)
    for path in ("/metrics", "/openapi.json"):
        assert api.simulate_get(path, headers={"Authorization": ""}).status_code == 200
    assert api.simulate_get("/health", headers={"Authorization": ""}).status_code == 503    # no scheduler


def test_unknown_routes_ids_and_methods(api):
    assert error(api.simulate_get("/v1/nothing"), 404)["code"] == "not_found"
    assert error(api.simulate_get("/v1/tenants/not-a-uuid"), 404)
    assert error(api.simulate_get("/v1/subscriptions/%00"), 404)
    assert error(api.simulate_get("/v1/tenants/1b4e28ba-2fa1-41d2-883f-0016d3cca427"), 404)
    assert error(api.simulate_put("/v1/tenants", json={}), 405)["code"] == "method_not_allowed"


@pytest.mark.parametrize("value", [None, True, 1e308, -1, 2**64, "", "\u0000", "x" * 5000, [], {}, "é" * 300])
def test_odd_values_never_cause_a_5xx(api, tenant, value):
    for field in ("tenant_id", "wiki", "title", "quota", "content", "enabled"):
        body = {"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "title": "T", field: value}
        resp = api.simulate_post("/v1/subscriptions", json=body)
        assert resp.status_code < 500, (field, value, resp.text)
        api.simulate_delete(resp.headers.get("location", "/v1/none"))
    for field in ("name", "quota"):
        assert api.simulate_post("/v1/tenants", json={"name": "n", field: value}).status_code < 500
