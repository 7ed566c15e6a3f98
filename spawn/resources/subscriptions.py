"""The hub's sends: POST /v1/subscriptions, a batch of drops and puts (drops first). Every item is
idempotent: dropping an unknown id and putting an equal spec change nothing."""
import logging
from urllib.parse import urlsplit

from shared.errors import BlackWidowError, ValidationError
from shared.json_body import read_json
from shared.wire import DropAck, ItemError, PutAck, SendBatch, SendBatchAck, SubscriptionSpec
from spawn.node import Node

logger = logging.getLogger(__name__)

# The item count (shared.wire.MAX_BATCH_ITEMS, 1,000) is what bounds a batch: a worst-case spec (a
# 2,048-character wiki URL, a 255-byte title sent as \u escapes) is about 3 KB of JSON, so 1,000 of
# them fit in 4 MiB; a typical spec is about 300 bytes.
MAX_BATCH_BYTES = 4 * 1024 * 1024


def parse_spec(body: dict) -> SubscriptionSpec:
    """A spec the node can run, or a ValidationError naming the field."""
    spec = SubscriptionSpec.from_dict(body)
    if urlsplit(spec.wiki).scheme not in ("http", "https") or not urlsplit(spec.wiki).hostname:
        raise ValidationError("'wiki' must be an http(s) api.php URL", field="wiki")
    if not spec.title.strip():
        raise ValidationError("'title' must not be empty", field="title")
    return spec


def put(node: Node, spec: SubscriptionSpec) -> PutAck:
    status, changed = node.put(spec)
    return PutAck(id=spec.id, state=status.state, changed=changed)


def drop(node: Node, sub_id: str) -> DropAck:
    return DropAck(id=sub_id, removed=node.delete(sub_id))


def apply_batch(node: Node, batch: SendBatch) -> SendBatchAck:
    """Every drop, then every put. An item that fails answers an ItemError; the others still apply."""
    drops = tuple(_isolated(sub_id, drop, node, sub_id) for sub_id in batch.drops)
    puts = tuple(_isolated(_item_id(body), _put_body, node, body) for body in batch.puts)
    return SendBatchAck(drops=drops, puts=puts)


def _put_body(node: Node, body) -> PutAck:
    return put(node, parse_spec(body))


def _item_id(body) -> str | None:
    return body.get("id") if isinstance(body, dict) and isinstance(body.get("id"), str) else None


def _isolated(item_id: str | None, apply, *args):
    try:
        return apply(*args)
    except BlackWidowError as exc:
        return ItemError.of(item_id, exc)
    except Exception:           # a bug must cost one item, not the batch
        logger.exception("batch.item_error", extra={"subscription": item_id})
        return ItemError(id=item_id, code="internal", message="internal error")


class SubscriptionsResource:
    def __init__(self, node: Node):
        self.node = node

    def on_post(self, req, resp) -> None:
        batch = SendBatch.from_dict(read_json(req, MAX_BATCH_BYTES))
        resp.media = apply_batch(self.node, batch).to_dict()
