"""POST /v1/keepalive: the hub's scheduler says it is alive between polls, however long its tick takes
(docs/coordination.md, "Liveness"). Tiny both ways; the node secret as for every hub call."""
from spawn.node import Node


class KeepaliveResource:
    def __init__(self, node: Node):
        self.node = node

    def on_post(self, req, resp) -> None:
        resp.media = self.node.keepalive()
