"""POST /v1/budgets: a budget round, sent by the hub's scheduler between its polls to hand a request slot over
without waiting for the next tick (docs/upstream.md, "Handovers between ticks"). The node secret as for every
hub call; the body is a BudgetRound, the answer a BudgetRoundAck."""
from shared.budget_wire import BudgetRound
from shared.json_body import read_json
from spawn.node import Node

MAX_BODY_BYTES = 256 * 1024


class BudgetsResource:
    def __init__(self, node: Node):
        self.node = node

    def on_post(self, req, resp) -> None:
        resp.media = self.node.budget_round(BudgetRound.from_dict(read_json(req, MAX_BODY_BYTES))).to_dict()
