"""POST /v1/subscriptions (a batch of drops and puts) through falcon.testing.TestClient over create_app."""
import json
import logging

import pytest

from shared.wire import MAX_BATCH_ITEMS
from spawn.resources.subscriptions import MAX_BATCH_BYTES
from tests.unit.spawn.test_api import AUTH, SECRET, batch, env  # noqa: F401 - env is a fixture
from tests.unit.spawn.test_registry import spec


def held(h) -> dict[str, dict]:
    return {s.id: s.spec for s in h.registry.snapshot()}


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": SECRET}])
def test_a_batch_without_the_node_secret_is_401_and_applies_nothing(env, headers):
    h, _, client = env
    resp = batch(client, puts=[spec("a").to_dict()], headers=headers)
    assert resp.status_code == 401 and resp.json["error"]["field"] == "Authorization"
    assert held(h) == {}


def test_batched_puts_are_idempotent_and_a_changed_spec_is_updated_in_place(env):
    h, _, client = env
    specs = [spec("a"), spec("b", title="Other"), spec("c", tenant="t2")]     # c shares a's article
    first = batch(client, puts=[s.to_dict() for s in specs])
    assert first.status_code == 200
    assert first.json == {"drops": [],
                          "puts": [{"id": i, "state": "assigned", "changed": True} for i in "abc"]}
    assert len(h.made) == 2

    again = batch(client, puts=[s.to_dict() for s in specs])
    assert [p["changed"] for p in again.json["puts"]] == [False, False, False]
    changed = batch(client, puts=[spec("a", quota=5).to_dict()])
    assert changed.json["puts"] == [{"id": "a", "state": "assigned", "changed": True}]
    assert held(h)["a"]["quota"] == 5 and len(h.made) == 2 and not h.made[0].stopped   # same source kept


def test_drops_apply_before_puts_so_a_drop_and_put_of_one_id_restarts_it(env):
    h, _, client = env
    batch(client, puts=[spec("a").to_dict()])
    resp = batch(client, drops=["a", "unknown"], puts=[spec("a").to_dict()])
    assert resp.status_code == 200
    assert resp.json["drops"] == [{"id": "a", "removed": True}, {"id": "unknown", "removed": False}]
    assert resp.json["puts"] == [{"id": "a", "state": "assigned", "changed": True}]
    assert set(held(h)) == {"a"}
    assert [s.stopped for s in h.made] == [True, False]        # the old source stopped, a fresh one runs


def test_one_bad_spec_fails_only_itself(env):
    h, _, client = env
    no_title = spec("x").to_dict()
    del no_title["title"]
    bad_wiki = {**spec("y").to_dict(), "wiki": "ftp://x/api.php"}
    resp = batch(client, puts=[spec("a").to_dict(), no_title, bad_wiki, ["not", "an", "object"],
                               {**spec("z").to_dict(), "id": 7}, spec("b", title="Other").to_dict()])
    assert resp.status_code == 200
    acks = resp.json["puts"]
    assert acks[0] == {"id": "a", "state": "assigned", "changed": True}
    assert acks[5] == {"id": "b", "state": "assigned", "changed": True}
    assert [(e["id"], e["error"]["code"], e["error"]["field"]) for e in acks[1:5]] == [
        ("x", "invalid", "title"), ("y", "invalid", "wiki"), (None, "invalid", None), (None, "invalid", "id")]
    assert all(e["error"]["message"] for e in acks[1:5])
    assert set(held(h)) == {"a", "b"}


def test_an_unexpected_error_costs_one_item_and_is_logged(env, caplog):
    h, node, client = env
    real_put = node.put

    def put_or_fail(s):
        if s.id == "boom":
            raise RuntimeError("a bug")
        return real_put(s)

    node.put = put_or_fail
    caplog.set_level(logging.ERROR)
    resp = batch(client, puts=[spec("boom").to_dict(), spec("a").to_dict()])
    assert resp.status_code == 200
    assert resp.json["puts"] == [{"id": "boom", "error": {"code": "internal", "message": "internal error",
                                                          "field": None}},
                                 {"id": "a", "state": "assigned", "changed": True}]
    assert "batch.item_error" in caplog.text and set(held(h)) == {"a"}


@pytest.mark.parametrize("body, status, field", [
    ({"drops": [f"d{i}" for i in range(MAX_BATCH_ITEMS + 1)]}, 413, "drops"),
    ({"drops": ["d"], "puts": [spec(f"p{i}").to_dict() for i in range(MAX_BATCH_ITEMS)]}, 413, "puts"),
    ({"drops": ["a", 3]}, 422, "drops"),
    ({"drops": "a"}, 422, "drops"),
    ({"puts": {"id": "a"}}, 422, "puts"),
    (["a"], 422, None),
])
def test_bad_or_oversized_batches_are_refused_whole_naming_the_field(env, body, status, field):
    h, _, client = env
    batch(client, puts=[spec("a").to_dict()])
    resp = client.simulate_post("/v1/subscriptions", json=body, headers=AUTH)
    assert resp.status_code == status and resp.json["error"]["field"] == field, resp.json
    assert set(held(h)) == {"a"}                   # nothing dropped, nothing added


def test_the_byte_limit_fits_a_full_batch_of_worst_case_specs_and_refuses_more(env):
    h, _, client = env
    title = "\U0001d538" * 63                          # 252 UTF-8 bytes, 12 bytes each as JSON escapes
    wiki = "https://" + "w" * (2048 - len("https:///api.php")) + "/api.php"
    specs = [{**spec(f"{i:036d}", title=title).to_dict(), "wiki": wiki, "tenant_id": "t" * 36,
              "source_uuid": "u" * 36, "quota": 2**63 - 1} for i in range(MAX_BATCH_ITEMS)]
    body = json.dumps({"drops": [], "puts": specs})     # ASCII only, as the hub's client sends it
    assert len(body) <= MAX_BATCH_BYTES
    json_headers = {**AUTH, "Content-Type": "application/json"}
    resp = client.simulate_post("/v1/subscriptions", body=body, headers=json_headers)
    assert resp.status_code == 200 and len(held(h)) == MAX_BATCH_ITEMS
    assert all(p["changed"] for p in resp.json["puts"])

    too_big = json.dumps({"drops": [], "puts": [{**specs[0], "title": "x" * MAX_BATCH_BYTES}]})
    resp = client.simulate_post("/v1/subscriptions", body=too_big, headers=json_headers)
    assert resp.status_code == 413 and resp.json["error"]["code"] == "too_large"
