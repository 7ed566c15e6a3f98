"""The node API through falcon.testing.TestClient over create_app (fake sources, no servers)."""
import pytest
from falcon import testing

from spawn.app import create_app
from tests.unit.spawn.test_node import make_node
from tests.unit.spawn.test_registry import spec

SECRET = "s3cret-node"
AUTH = {"Authorization": f"Bearer {SECRET}"}


@pytest.fixture
def env():
    h, node = make_node()
    node.register_once()
    return h, node, testing.TestClient(create_app(node, secret=SECRET, metrics_port=80))    # TestClient's port


def batch(client, drops=(), puts=(), headers=AUTH):
    return client.simulate_post("/v1/subscriptions", json={"drops": list(drops), "puts": list(puts)},
                                headers=headers)


def put(client, s) -> dict:
    """One spec sent as the hub sends it (a batch of one); the spawn's answer to it."""
    resp = batch(client, puts=[s.to_dict()])
    assert resp.status_code == 200, resp.json
    return resp.json["puts"][0]


@pytest.mark.parametrize("method, path", [("GET", "/v1/status"), ("POST", "/v1/status"),
                                          ("POST", "/v1/subscriptions")])
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": SECRET},
                                     {"Authorization": f"Basic {SECRET}"}])
def test_hub_calls_without_the_node_secret_are_401(env, method, path, headers):
    _, _, client = env
    resp = client.simulate_request(method, path, headers=headers, json={})
    assert resp.status_code == 401
    assert resp.json["error"]["code"] == "unauthorized" and resp.json["error"]["field"] == "Authorization"
    assert SECRET not in resp.text


def test_put_is_idempotent(env):
    h, _, client = env
    assert put(client, spec("a")) == {"id": "a", "state": "assigned", "changed": True}
    assert put(client, spec("a"))["changed"] is False
    assert put(client, spec("a", quota=5))["changed"] is True and len(h.made) == 1


def test_dropping_an_unknown_id_is_a_success(env):
    _, _, client = env
    resp = batch(client, drops=["nope"])
    assert resp.status_code == 200 and resp.json == {"drops": [{"id": "nope", "removed": False}], "puts": []}
    put(client, spec("a"))
    assert batch(client, drops=["a"]).json["drops"] == [{"id": "a", "removed": True}]


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_there_is_no_single_item_route(env, method):
    h, _, client = env
    put(client, spec("a"))
    resp = client.simulate_request(method, "/v1/subscriptions/a", headers=AUTH, json=spec("a", quota=5).to_dict())
    assert resp.status_code == 404 and resp.json["error"]["code"]
    assert h.registry.snapshot()[0].spec["quota"] == spec("a").quota


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("title"), "title"),
    (lambda d: d.update(quota=-1), "quota"),
    (lambda d: d.update(quota="10"), "quota"),
    (lambda d: d.update(content="yes"), "content"),
    (lambda d: d.update(id=7), "id"),
    (lambda d: d.update(wiki="ftp://x/api.php"), "wiki"),
    (lambda d: d.update(title="  "), "title"),
])
def test_a_bad_spec_is_an_item_error_naming_the_field(env, mutate, field):
    h, _, client = env
    body = spec("a").to_dict()
    mutate(body)
    resp = batch(client, puts=[body])
    assert resp.status_code == 200
    error = resp.json["puts"][0]["error"]
    assert error["code"] == "invalid" and error["field"] == field and error["message"]
    assert h.registry.snapshot() == []


def test_malformed_json_and_wrong_content_type_are_4xx(env):
    _, _, client = env
    resp = client.simulate_post("/v1/subscriptions", body="{not json", headers={**AUTH, "Content-Type":
                                                                                "application/json"})
    assert resp.status_code == 400 and "error" in resp.json
    resp = client.simulate_post("/v1/subscriptions", body="x=1", headers={**AUTH, "Content-Type": "text/plain"})
    assert resp.status_code == 415


def test_post_status_with_a_poll_refreshes_orphan_timers_and_reports(env):
    h, node, client = env
    put(client, spec("a"))
    put(client, spec("b", title="Other"))
    h.clock.advance(25)
    resp = client.simulate_post("/v1/status", json={"node_id": node.node_id, "assigned": ["a"]}, headers=AUTH)
    assert resp.status_code == 200
    body = resp.json
    assert [s["id"] for s in body["subscriptions"]] == ["a"]          # b was an orphan
    assert body["attached"] is True and body["node_id"] == node.node_id and body["boot_id"]
    assert body["subscriptions"][0]["spec"]["title"] == "Page"
    assert "secret" not in resp.text.lower()


def test_poll_with_a_bad_body_names_the_field(env):
    _, _, client = env
    resp = client.simulate_post("/v1/status", json={"node_id": "n", "assigned": [1]}, headers=AUTH)
    assert resp.status_code == 422 and resp.json["error"]["field"] == "assigned"


def test_get_status_is_a_heartbeat(env):
    h, node, client = env
    h.clock.advance(14)
    assert client.simulate_get("/v1/status", headers=AUTH).status_code == 200
    h.clock.advance(14)
    assert not node.watchdog.check()


def test_health_and_metrics_need_no_secret(env):
    _, _, client = env
    put(client, spec("a"))
    health = client.simulate_get("/health")
    assert health.status_code == 200
    assert health.json["attached"] is True and health.json["subscribers"] == 1 and health.json["sources"] == 1
    metrics = client.simulate_get("/metrics")
    assert metrics.status_code == 200 and "bw_spawn_subscribers 1.0" in metrics.text
    assert SECRET not in metrics.text


def test_metrics_only_on_the_metrics_listener(env):
    h, node, client = env
    assert client.simulate_get("/metrics", port=8701).status_code == 404       # the control port
    assert client.simulate_get("/health", port=8701).status_code == 200
    off = testing.TestClient(create_app(node, secret=SECRET))                    # no BW_METRICS_PORT
    assert off.simulate_get("/metrics").status_code == 404


def test_unknown_route_is_a_json_404(env):
    _, _, client = env
    resp = client.simulate_get("/v1/nothing", headers=AUTH)
    assert resp.status_code == 404 and resp.json["error"]["code"]
