"""POST /v1/changes (the change feed's nudges, sent by the hub in the tick that read them) through
falcon.testing.TestClient over create_app: nudged sources, and bad bodies refused naming the field."""
import pytest

from shared.feed_wire import HISTORY
from shared.hashing import source_uuid
from spawn.resources.changes import MAX_CHANGES
from tests.unit.spawn.test_api import AUTH, SECRET, env, put  # noqa: F401 - env is a fixture
from tests.unit.spawn.test_registry import spec


def post(client, body, headers=AUTH):
    return client.simulate_post("/v1/changes", json=body, headers=headers)


def test_a_nudge_reaches_the_source_of_its_page_and_unknown_pages_are_skipped(env):
    h, _, client = env
    a = spec("a")
    put(client, a)
    source = h.made[0]
    key = str(source_uuid(a.wiki, a.title))
    resp = post(client, {"changes": [{"wiki": a.wiki, "kind": HISTORY, "key": key},
                                     {"wiki": a.wiki, "kind": HISTORY, "key": str(source_uuid(a.wiki, "Nowhere"))}]})
    assert resp.status_code == 200 and resp.json == {"nudged": 1}
    assert source._verify_now and not source.settled


@pytest.mark.parametrize("body, status, field", [
    ({}, 422, "changes"),
    ({"changes": {"wiki": "w"}}, 422, "changes"),
    ({"changes": [{"wiki": "w", "kind": "later", "key": "k"}]}, 422, "changes"),
    ({"changes": [{"wiki": "w", "kind": "revisions"}]}, 422, "changes"),
    ({"changes": [{"wiki": "w", "kind": "check"}] * (MAX_CHANGES + 1)}, 413, "changes"),
])
def test_a_bad_body_is_refused_naming_the_field(env, body, status, field):
    _, _, client = env
    resp = post(client, body)
    assert resp.status_code == status and resp.json["error"]["field"] == field


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": SECRET}])
def test_changes_without_the_node_secret_are_401(env, headers):
    _, _, client = env
    assert post(client, {"changes": []}, headers).status_code == 401
