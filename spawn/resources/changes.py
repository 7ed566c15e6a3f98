"""POST /v1/changes: pages the change feed says changed, sent by the hub's scheduler in the tick that read them
(docs/coordination.md, "The change feed"). Idempotent: a page nudged twice makes one more pass. The node
secret as for every hub call; the body is `{"changes": [Nudge, ...]}`, at most 5,000 of them."""
from shared.errors import PayloadTooLarge, ValidationError
from shared.feed_wire import Nudge
from shared.json_body import read_json
from shared.wire_fields import listed
from spawn.node import Node

MAX_BODY_BYTES = 1024 * 1024
MAX_CHANGES = 5000


class ChangesResource:
    def __init__(self, node: Node):
        self.node = node

    def on_post(self, req, resp) -> None:
        body = read_json(req, MAX_BODY_BYTES)
        if not isinstance(body, dict) or not isinstance(body.get("changes"), list):
            raise ValidationError("'changes' must be a list", field="changes")
        if len(body["changes"]) > MAX_CHANGES:
            raise PayloadTooLarge(f"at most {MAX_CHANGES} changes per request", field="changes")
        resp.media = {"nudged": self.node.nudge(listed(body, "changes", Nudge.from_dict))}
