"""send_to_node: chunking, whole-request failures and per-item refusals, with a scripted client."""
import logging

import pytest

from blackwidow import reload, sends
from blackwidow.metrics import SchedulerMetrics
from blackwidow.spawn_client import SpawnBadResponse, SpawnRejected, SpawnUnreachable
from shared.errors import ValidationError
from shared.wire import MAX_BATCH_ITEMS, DropAck, ItemError, PutAck, SendBatchAck, SubscriptionSpec

NODE, URL = "node-1", "http://127.0.0.1:8701"


def spec(sub_id: str) -> SubscriptionSpec:
    return SubscriptionSpec(id=sub_id, source_uuid=f"src-{sub_id}", tenant_id="t1",
                            wiki="https://en.wikipedia.org/w/api.php", title=f"Page {sub_id}")


def drops(*ids):
    return [reload.Drop(NODE, i, "moved") for i in ids]


def puts(*ids):
    return [reload.Put(NODE, spec(i), "moved") for i in ids]


class ScriptedClient:
    """Answers each send_batch as a spawn would, unless `script` holds an exception for that call."""

    def __init__(self, script=(), refuse=()):
        self.calls: list[tuple[list[str], list[str]]] = []
        self.script = list(script)
        self.refuse = set(refuse)

    def send_batch(self, url, drop_ids, specs):
        assert url == URL
        self.calls.append((list(drop_ids), [s.id for s in specs]))
        failure = self.script.pop(0) if self.script else None
        if failure is not None:
            raise failure
        return SendBatchAck(
            drops=tuple(DropAck(i, True) for i in drop_ids),
            puts=tuple(ItemError.of(s.id, ValidationError("refused", field="title")) if s.id in self.refuse
                       else PutAck(s.id, "assigned", True) for s in specs))


def counted(metrics: SchedulerMetrics, name: str, **labels) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


def result(outcomes) -> list[tuple[str, bool]]:
    return [("put" if isinstance(o.action, reload.Put) else "drop", o.ok) for o in outcomes]


def test_drops_then_puts_in_requests_of_batch_size_items():
    client, metrics = ScriptedClient(), SchedulerMetrics()
    out = sends.send_to_node(client, NODE, URL, drops("a", "b"), puts("c", "d", "e", "f"), metrics,
                             batch_size=3)
    assert client.calls == [(["a", "b"], ["c"]), ([], ["d", "e", "f"])]
    assert [o.action for o in out] == [*drops("a", "b"), *puts("c", "d", "e", "f")]
    assert all(o.ok for o in out) and [o.state for o in out] == [None, None] + ["assigned"] * 4
    assert counted(metrics, "bw_hub_send_requests_total", result="ok") == 2
    assert counted(metrics, "bw_hub_sends_total", action="put", result="ok") == 4
    assert counted(metrics, "bw_hub_sends_total", action="drop", result="ok") == 2
    assert counted(metrics, "bw_hub_send_request_seconds_count") == 2


def test_nothing_to_send_makes_no_request():
    client = ScriptedClient()
    assert sends.send_to_node(client, NODE, URL, [], [], SchedulerMetrics()) == [] and client.calls == []


def test_an_unreachable_node_fails_that_request_and_skips_the_rest():
    client, metrics = ScriptedClient([None, SpawnUnreachable("HTTP 503", node_url=URL)]), SchedulerMetrics()
    out = sends.send_to_node(client, NODE, URL, drops("a"), puts("b", "c", "d", "e"), metrics, batch_size=2)
    assert len(client.calls) == 2                       # the third request was never sent
    assert result(out) == [("drop", True), ("put", True), ("put", False), ("put", False), ("put", False)]
    assert counted(metrics, "bw_hub_send_requests_total", result="failed") == 1
    assert counted(metrics, "bw_hub_sends_total", action="put", result="failed") == 3


@pytest.mark.parametrize("failure", [SpawnRejected("HTTP 413", node_url=URL, status=413),
                                     SpawnBadResponse("batch: expected one answer per sent id", node_url=URL),
                                     RuntimeError("a bug in the client")])
def test_a_request_refused_as_a_whole_fails_its_items_and_the_next_request_still_goes(failure, caplog):
    client, metrics = ScriptedClient([failure]), SchedulerMetrics()
    caplog.set_level(logging.WARNING)
    out = sends.send_to_node(client, NODE, URL, drops("a"), puts("b", "c"), metrics, batch_size=2)
    assert len(client.calls) == 2
    assert result(out) == [("drop", False), ("put", False), ("put", True)]
    assert ("send.error" if isinstance(failure, RuntimeError) else "send.failed") in caplog.text


def test_an_item_the_node_refuses_fails_alone(caplog):
    client, metrics = ScriptedClient(refuse={"c"}), SchedulerMetrics()
    caplog.set_level(logging.WARNING)
    out = sends.send_to_node(client, NODE, URL, drops("a"), puts("b", "c", "d"), metrics)
    assert len(client.calls) == 1
    assert result(out) == [("drop", True), ("put", True), ("put", False), ("put", True)]
    assert counted(metrics, "bw_hub_sends_total", action="put", result="failed") == 1
    assert counted(metrics, "bw_hub_send_requests_total", result="ok") == 1
    refused = [r for r in caplog.records if r.getMessage() == "send.refused"]
    assert [(r.subscription, r.field) for r in refused] == [("c", "title")]


def test_the_default_batch_fits_what_a_spawn_accepts():
    assert 1 < sends.BATCH_SIZE <= MAX_BATCH_ITEMS
