"""Sending one node its part of a reload plan: its drops, then its puts, in requests of BATCH_SIZE
items (POST /v1/subscriptions) sent one after another. Outcomes are per item. No SQL: the poller runs
nodes concurrently and records what came back.
"""
import logging
import time
from dataclasses import dataclass
from typing import Sequence

from blackwidow import reload
from blackwidow.metrics import SchedulerMetrics
from blackwidow.spawn_client import SpawnClient, SpawnError, SpawnUnreachable
from shared.wire import ItemError, PutAck, SendBatchAck

logger = logging.getLogger(__name__)

# Items per request. The hub's HTTP work per request is what limits a large reload (one node joining
# under modulo routing moves nearly every subscription), so fewer, larger requests; 500 typical specs
# are about 150 KB, which a spawn applies well inside the client's read timeout. A spawn takes up to
# shared.wire.MAX_BATCH_ITEMS.
BATCH_SIZE = 500


@dataclass(frozen=True, slots=True)
class Outcome:
    action: reload.Put | reload.Drop
    ok: bool
    state: str | None = None         # the node's answer to a put


def send_to_node(client: SpawnClient, node_id: str, url: str, drops: Sequence[reload.Drop],
                 puts: Sequence[reload.Put], metrics: SchedulerMetrics, *,
                 batch_size: int = BATCH_SIZE) -> list[Outcome]:
    """Send `drops` then `puts` in order, `batch_size` items per request. A request that fails as a
    whole fails each of its items (they are planned again next tick); once the node proves unreachable
    the remaining requests are not sent and their items fail too. An item the node refuses alone
    (an ItemError in its answer) fails alone."""
    actions: list[reload.Put | reload.Drop] = [*drops, *puts]
    out: list[Outcome] = []
    unreachable = False
    for start in range(0, len(actions), batch_size):
        chunk = actions[start:start + batch_size]
        ack = None if unreachable else _request(client, node_id, url, chunk, metrics)
        if isinstance(ack, SendBatchAck):
            out.extend(_answered(node_id, chunk, (*ack.drops, *ack.puts), metrics))
            continue
        unreachable = unreachable or isinstance(ack, SpawnUnreachable)
        for action in chunk:
            out.append(Outcome(action, False))
            metrics.sends.labels(_kind(action), "failed").inc()
    return out


def _request(client: SpawnClient, node_id: str, url: str, chunk: list, metrics: SchedulerMetrics):
    """The node's answer to one request, or the exception that failed it."""
    drops = [a.subscription_id for a in chunk if isinstance(a, reload.Drop)]
    puts = [a.spec for a in chunk if isinstance(a, reload.Put)]
    began = time.monotonic()
    try:
        ack = client.send_batch(url, drops, puts)
        metrics.send_requests.labels("ok").inc()
        return ack
    except Exception as exc:
        if isinstance(exc, SpawnError):
            logger.warning("send.failed", extra={"node": node_id, "drops": len(drops), "puts": len(puts),
                                                 "error": str(exc)})
        else:                   # a bug must cost this request's items, not the tick
            logger.exception("send.error", extra={"node": node_id, "drops": len(drops), "puts": len(puts)})
        metrics.send_requests.labels("failed").inc()
        return exc
    finally:
        metrics.send_request_seconds.observe(time.monotonic() - began)


def _answered(node_id: str, chunk: list, answers: tuple, metrics: SchedulerMetrics) -> list[Outcome]:
    out = []
    for action, answer in zip(chunk, answers):       # the client checked: one answer per item, in order
        kind = _kind(action)
        if isinstance(answer, ItemError):
            logger.warning("send.refused", extra={"node": node_id, "action": kind, "subscription": answer.id,
                                                  "code": answer.code, "field": answer.field,
                                                  "error": answer.message})
            out.append(Outcome(action, False))
            metrics.sends.labels(kind, "failed").inc()
            continue
        out.append(Outcome(action, True, answer.state if isinstance(answer, PutAck) else None))
        metrics.sends.labels(kind, "ok").inc()
    return out


def _kind(action) -> str:
    return "put" if isinstance(action, reload.Put) else "drop"
