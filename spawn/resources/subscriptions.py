"""PUT/DELETE /v1/subscriptions/{sub_id}: the hub's sends. Both idempotent."""
from urllib.parse import urlsplit

from shared.errors import ValidationError
from shared.json_body import read_json
from shared.wire import SubscriptionSpec
from spawn.node import Node

MAX_BODY_BYTES = 64 * 1024


def parse_spec(body: dict, sub_id: str) -> SubscriptionSpec:
    spec = SubscriptionSpec.from_dict(body)
    if spec.id != sub_id:
        raise ValidationError("'id' must equal the id in the URL", field="id")
    if urlsplit(spec.wiki).scheme not in ("http", "https") or not urlsplit(spec.wiki).hostname:
        raise ValidationError("'wiki' must be an http(s) api.php URL", field="wiki")
    if not spec.title.strip():
        raise ValidationError("'title' must not be empty", field="title")
    return spec


class SubscriptionsResource:
    def __init__(self, node: Node):
        self.node = node

    def on_put_item(self, req, resp, sub_id: str) -> None:
        spec = parse_spec(read_json(req, MAX_BODY_BYTES), sub_id)
        status, changed = self.node.put(spec)
        resp.media = {"id": spec.id, "state": status.state, "changed": changed}

    def on_delete_item(self, req, resp, sub_id: str) -> None:
        resp.media = {"id": sub_id, "removed": self.node.delete(sub_id)}
