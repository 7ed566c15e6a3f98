"""GET/POST /v1/status: the hub's heartbeat. POST carries a Poll naming the assigned ids."""
from shared.json_body import read_json
from shared.wire import Poll
from spawn.node import Node

MAX_BODY_BYTES = 4 * 1024 * 1024     # a Poll lists every id assigned to this node


class StatusResource:
    def __init__(self, node: Node):
        self.node = node

    def on_get(self, req, resp) -> None:
        resp.media = self.node.heartbeat().to_dict()

    def on_post(self, req, resp) -> None:
        poll = Poll.from_dict(read_json(req, MAX_BODY_BYTES))
        resp.media = self.node.heartbeat(poll).to_dict()
