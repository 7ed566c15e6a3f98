"""GET/POST /v1/status: the hub's heartbeat. POST carries a Poll naming the assigned ids (or a page of
them) and may ask for a bounded page of the report (docs/coordination.md, "Bounded polls")."""
from shared.json_body import read_json
from shared.wire import Poll
from spawn.node import Node

# A Poll page names at most BW_POLL_PAGE_IDS ids (5,000: under 1 MiB with their leases); a hub of the
# version before pages sends every id in one Poll
MAX_BODY_BYTES = 4 * 1024 * 1024


class StatusResource:
    def __init__(self, node: Node):
        self.node = node

    def on_get(self, req, resp) -> None:
        resp.media = self.node.heartbeat().to_dict()

    def on_post(self, req, resp) -> None:
        poll = Poll.from_dict(read_json(req, MAX_BODY_BYTES))
        resp.media = self.node.heartbeat(poll).to_dict()
