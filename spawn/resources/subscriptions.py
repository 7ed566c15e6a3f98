"""The hub's sends: PUT/DELETE /v1/subscriptions/{sub_id} one at a time, POST /v1/subscriptions many
at once (drops, then puts, each as the single routes do). All idempotent."""
import logging
from urllib.parse import urlsplit

from shared.errors import BlackWidowError, ValidationError
from shared.json_body import read_json
from shared.wire import DropAck, ItemError, PutAck, SendBatch, SendBatchAck, SubscriptionSpec
from spawn.node import Node

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
# The item count (shared.wire.MAX_BATCH_ITEMS, 1,000) is what bounds a batch: a worst-case spec (a
# 2,048-character wiki URL, a 255-byte title sent as \u escapes) is about 3 KB of JSON, so 1,000 of
# them fit in 4 MiB; a typical spec is about 300 bytes.
MAX_BATCH_BYTES = 4 * 1024 * 1024


def parse_spec(body: dict, sub_id: str | None = None) -> SubscriptionSpec:
    """A spec the node can run; `sub_id`, when given, is the id in the URL the spec must carry."""
    spec = SubscriptionSpec.from_dict(body)
    if sub_id is not None and spec.id != sub_id:
        raise ValidationError("'id' must equal the id in the URL", field="id")
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

    def on_put_item(self, req, resp, sub_id: str) -> None:
        resp.media = put(self.node, parse_spec(read_json(req, MAX_BODY_BYTES), sub_id)).to_dict()

    def on_delete_item(self, req, resp, sub_id: str) -> None:
        resp.media = drop(self.node, sub_id).to_dict()
