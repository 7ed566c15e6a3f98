import json
import logging

import pytest
import requests
import responses

from blackwidow.spawn_client import SpawnBadResponse, SpawnClient, SpawnError, SpawnRejected, SpawnUnreachable
from shared.wire import DropAck, ItemError, Poll, PutAck, SubscriptionSpec

NODE = "http://127.0.0.1:8701"
SECRET = "s3cret-node-key"
SPEC = SubscriptionSpec(id="sub/1", source_uuid="src-1", tenant_id="t1", wiki="https://en.wikipedia.org/w/api.php",
                        title="Pyrus", quota=10)
REPORT = {"node_id": "n1", "boot_id": "b1", "attached": True, "sources": 1,
          "subscriptions": [{"id": "sub/1", "state": "running", "revisions": 3, "last_rev_id": 42,
                             "spec": SPEC.to_dict()}]}


@pytest.fixture
def client():
    return SpawnClient(requests.Session(), SECRET, timeout=(0.5, 1.0))


@pytest.fixture
def mocked():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def test_poll_posts_the_heartbeat_with_the_secret_and_parses_the_report(client, mocked):
    mocked.post(f"{NODE}/v1/status", json=REPORT)
    report = client.poll(NODE, Poll(node_id="n1", assigned=("sub/1",)))
    assert report.boot_id == "b1" and report.subscriptions[0].revisions == 3
    sent = mocked.calls[0].request
    assert sent.headers["Authorization"] == f"Bearer {SECRET}"
    assert json.loads(sent.body) == {"node_id": "n1", "assigned": ["sub/1"]}
    assert SECRET.encode() not in sent.body


def test_a_batch_of_drops_only_takes_an_unknown_id_as_success(client, mocked):
    mocked.post(f"{NODE}/v1/subscriptions", json={"drops": [{"id": "sub/1", "removed": False}], "puts": []})
    ack = client.send_batch(NODE + "/", ["sub/1"], [])
    assert ack.drops == (DropAck("sub/1", False),) and ack.puts == ()
    assert json.loads(mocked.calls[0].request.body) == {"drops": ["sub/1"], "puts": []}


def test_timeout_is_unreachable(client, mocked):
    mocked.post(f"{NODE}/v1/status", body=requests.exceptions.ReadTimeout("read timed out"))
    with pytest.raises(SpawnUnreachable, match="timed out"):
        client.poll(NODE, Poll(node_id="n1"))


def test_connection_refused_is_unreachable(client, mocked):
    mocked.post(f"{NODE}/v1/subscriptions", body=requests.exceptions.ConnectionError("refused"))
    with pytest.raises(SpawnUnreachable) as caught:
        client.send_batch(NODE, [], [SPEC])
    assert caught.value.node_url == NODE


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_unreachable_with_the_status(client, mocked, status):
    mocked.post(f"{NODE}/v1/status", status=status, json={"error": {"message": "down"}})
    with pytest.raises(SpawnUnreachable) as caught:
        client.poll(NODE, Poll(node_id="n1"))
    assert caught.value.status == status


def test_401_is_rejected_and_the_message_never_holds_the_secret(client, mocked, caplog):
    mocked.post(f"{NODE}/v1/subscriptions", status=401,
                json={"error": {"code": "unauthorized", "message": "bad node secret", "field": None}})
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SpawnRejected) as caught:
        client.send_batch(NODE, ["old"], [SPEC])
    assert caught.value.status == 401 and "bad node secret" in str(caught.value)
    assert SECRET not in str(caught.value) and SECRET not in caplog.text and SECRET not in repr(client)


def test_422_is_rejected(client, mocked):
    mocked.post(f"{NODE}/v1/subscriptions", status=422,
                json={"error": {"code": "invalid", "message": "'puts' must be a list", "field": "puts"}})
    with pytest.raises(SpawnRejected, match="'puts' must be a list") as caught:
        client.send_batch(NODE, [], [SPEC])
    assert caught.value.status == 422


@pytest.mark.parametrize("body", ["<html>oops</html>", json.dumps({"boot_id": "b"}),
                                  json.dumps({"boot_id": "b", "attached": True, "subscriptions": {"x": 1}})])
def test_bad_status_bodies_are_bad_responses(client, mocked, body):
    mocked.post(f"{NODE}/v1/status", body=body, content_type="application/json")
    with pytest.raises(SpawnBadResponse):
        client.poll(NODE, Poll(node_id="n1"))


@pytest.mark.parametrize("put_ack", [{"id": "other", "state": "assigned", "changed": True},
                                     {"id": "sub/1", "state": "assigned"}, ["sub/1"]])
def test_a_put_ack_must_name_the_sent_id(client, mocked, put_ack):
    mocked.post(f"{NODE}/v1/subscriptions", json={"drops": [], "puts": [put_ack]})
    with pytest.raises(SpawnBadResponse):
        client.send_batch(NODE, [], [SPEC])


def test_every_failure_is_a_spawn_error(client, mocked):
    mocked.post(f"{NODE}/v1/status", status=418)
    with pytest.raises(SpawnError):
        client.poll(NODE, Poll(node_id="n1"))


SPEC2 = SubscriptionSpec(id="sub-2", source_uuid="src-2", tenant_id="t1", wiki=SPEC.wiki, title="Malus")


def test_send_batch_posts_drops_then_puts_and_returns_an_answer_per_item(client, mocked):
    mocked.post(f"{NODE}/v1/subscriptions", json={
        "drops": [{"id": "old", "removed": True}],
        "puts": [{"id": "sub/1", "state": "assigned", "changed": True},
                 {"id": "sub-2",
                  "error": {"code": "invalid", "message": "'title' is bad", "field": "title"}}]})
    ack = client.send_batch(NODE, ["old"], [SPEC, SPEC2])
    assert ack.drops == (DropAck("old", True),)
    assert ack.puts == (PutAck("sub/1", "assigned", True),
                        ItemError("sub-2", "invalid", "'title' is bad", "title"))
    sent = mocked.calls[0].request
    assert json.loads(sent.body) == {"drops": ["old"], "puts": [SPEC.to_dict(), SPEC2.to_dict()]}
    assert sent.headers["Authorization"] == f"Bearer {SECRET}" and SECRET.encode() not in sent.body


@pytest.mark.parametrize("body", [
    {"drops": [], "puts": []},                                                          # answers missing
    {"drops": [{"id": "old", "removed": True}], "puts": [{"id": "sub-2", "state": "x", "changed": True},
                                                         {"id": "sub/1", "state": "x", "changed": True}]},
    {"drops": [{"id": "old"}], "puts": [{"id": "sub/1", "state": "x", "changed": True},
                                        {"id": "sub-2", "state": "x", "changed": True}]},   # no removed
    {"puts": []}, ["old"]])
def test_send_batch_answers_must_match_what_was_sent(client, mocked, body):
    mocked.post(f"{NODE}/v1/subscriptions", json=body)
    with pytest.raises(SpawnBadResponse):
        client.send_batch(NODE, ["old"], [SPEC, SPEC2])


@pytest.mark.parametrize("status, error", [(413, SpawnRejected), (404, SpawnRejected),
                                           (503, SpawnUnreachable)])
def test_send_batch_failing_as_a_whole_raises(client, mocked, status, error):
    mocked.post(f"{NODE}/v1/subscriptions", status=status,
                json={"error": {"code": "x", "message": "no", "field": "puts"}})
    with pytest.raises(error) as caught:
        client.send_batch(NODE, [], [SPEC])
    assert caught.value.status == status
