"""The spawn's health: the pure decision (one line per state) and the node's lifecycle through GET /health."""
import math

import pytest
from falcon import testing

from spawn.app import create_app
from spawn.health import Attachment, spawn_health
from spawn.hub_client import HubRejected, HubUnreachable
from tests.unit.spawn.test_node import FakeHub, make_node
from tests.unit.spawn.test_registry import spec


@pytest.mark.parametrize("att, healthy, state, reason", [
    (Attachment(registered=True, attached=True, detached=False), True, "attached", None),
    (Attachment(registered=False, attached=False, detached=False), False, "registering", "not accepted yet"),
    (Attachment(registered=False, attached=False, detached=False, unreachable=True), False, "registering",
     "unreachable"),
    (Attachment(registered=False, attached=False, detached=False, failed_status=403), False, "refused", "HTTP 403"),
    (Attachment(registered=False, attached=False, detached=False, failed_status=503), False, "registering",
     "the hub answered HTTP 503"),
    (Attachment(registered=False, attached=False, detached=True), False, "detached", "over 15 s"),
    (Attachment(registered=False, attached=False, detached=True, failed_status=409), False, "refused", "409"),
    (Attachment(registered=False, attached=False, detached=True, failed_status=502), False, "detached", "502"),
    (Attachment(registered=False, attached=True, detached=True), False, "detached", "registering again"),
    (Attachment(registered=False, attached=True, detached=False), False, "registering", "not accepted"),
    (Attachment(registered=True, attached=False, detached=False), False, "detached", "jobs dropped"),
])
def test_spawn_health(att, healthy, state, reason):
    health = spawn_health(att, load=7, detach_after_s=15.0)
    assert (health.healthy, health.state) == (healthy, state)
    assert health.load == (7 if healthy else None)          # never a made-up 0 outside the cluster
    assert (health.reason is None) if reason is None else (reason in health.reason)


class RefusingHub(FakeHub):
    def __init__(self, errors):
        super().__init__()
        self.errors = list(errors)

    def register(self, url):
        if self.errors:
            self.calls += 1
            raise self.errors.pop(0)
        return super().register(url)


def test_health_follows_registration_attachment_and_detach():
    hub = RefusingHub([HubUnreachable("connection refused"), HubRejected("registration answered HTTP 403", 403)])
    h, node = make_node(hub, wait=lambda d: False)
    client = testing.TestClient(create_app(node, secret="s", metrics_port=80))      # TestClient's port

    def health():
        resp = client.simulate_get("/health")
        return resp.status_code, resp.json["state"], resp.json["load"]

    assert health() == (503, "registering", None)
    assert "bw_spawn_load NaN" in client.simulate_get("/metrics").text
    node.register_until_answered()                   # refused after unreachable: the refusal shows ...
    assert node.attachment().failed_status is None  # ... only while it lasts: the third attempt succeeded
    assert health() == (200, "attached", 0)
    node.put(spec("a"))
    assert health() == (200, "attached", 2)           # one subscriber, one source

    h.clock.advance(16)
    assert node.watchdog.check()                      # hub silence: detached, everything dropped
    assert health() == (503, "detached", None)
    node.report()
    assert math.isnan(node.metrics.registry.get_sample_value("bw_spawn_load"))
    node.register_once()
    assert health() == (200, "attached", 0)
    assert "bw_spawn_load 0.0" in client.simulate_get("/metrics").text


def test_a_refused_registration_is_a_503_naming_the_refusal():
    hub = RefusingHub([HubRejected("registration answered HTTP 403", 403)] * 3)
    waits = []
    h, node = make_node(hub, wait=lambda d: waits.append(d) or len(waits) >= 2)     # shut down after 2 waits
    client = testing.TestClient(create_app(node, secret="s"))
    assert node.register_until_answered() is False
    resp = client.simulate_get("/health")
    assert resp.status_code == 503 and resp.json["state"] == "refused" and "HTTP 403" in resp.json["reason"]
    assert resp.json["load"] is None and resp.json["attached"] is False
