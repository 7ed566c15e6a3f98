"""A budget round's JSON shapes between hub and spawn (docs/upstream.md, "Handovers between ticks"). Pure.

Hub -> spawn, POST /v1/budgets: `BudgetRound`, the Budgets of the identities whose holds changed since the
node's last poll (possibly none: the hub only wants to know whether the node gave a slot back).
Spawn -> hub: `BudgetRoundAck`, the node's IdentityUse of every identity it paces, as a poll's report has them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from shared.errors import ValidationError
from shared.wire import Budget, IdentityUse
from shared.wire_fields import keyed, required

MAX_BUDGETS = 100         # identities in one round: a node's wikis, far more than any deployment follows


@dataclass(frozen=True)
class BudgetRound:
    node_id: str
    budgets: Mapping[str, Budget] = field(default_factory=dict)      # {identity id: Budget}

    def to_dict(self) -> dict:
        return {"node_id": self.node_id, "budgets": {key: b.to_dict() for key, b in self.budgets.items()}}

    @classmethod
    def from_dict(cls, body: dict) -> "BudgetRound":
        node_id = required(body, "node_id", str)
        budgets = keyed(body, "budgets", Budget.from_dict)
        if len(budgets) > MAX_BUDGETS:
            raise ValidationError(f"at most {MAX_BUDGETS} budgets per round", field="budgets")
        return cls(node_id=node_id, budgets=budgets)


@dataclass(frozen=True)
class BudgetRoundAck:
    node_id: str
    identities: Mapping[str, IdentityUse] = field(default_factory=dict)   # {identity id: use}

    def to_dict(self) -> dict:
        return {"node_id": self.node_id, "identities": {key: u.to_dict() for key, u in self.identities.items()}}

    @classmethod
    def from_dict(cls, body: dict) -> "BudgetRoundAck":
        return cls(node_id=required(body, "node_id", str),
                   identities=keyed(body, "identities", IdentityUse.from_dict))
