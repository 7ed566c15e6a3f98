"""What a budget round between two ticks delivers, and to whom (docs/upstream.md, "Handovers between ticks").
Pure: no I/O, no clock.

A round plans the budgets again exactly as a tick does (blackwidow.upstream.tick.plan_budgets), but talks only
to the nodes where that can change something now: those whose planned Budget changes what they may do, and
those asked to give a slot back that have not said they did. Everyone else hears of the round's gen at the
next poll, as a node whose poll was lost does: safe, because holds are written before any node hears of them.
"""
from typing import Mapping

from blackwidow.upstream.allocate import Plan
from shared.wire import Budget, IdentityUse

# what a node may do under a Budget; a new gen, new weights or new `served` figures alone wait for the next poll
_ACTING = ("windows", "paused_until", "give_back", "login", "credential", "slow_after_s", "slow_wait_s", "maxlag")


def changes_use(old: Budget | None, new: Budget) -> bool:
    """Whether the node acts differently under `new` than under `old` (None: it has none for the identity)."""
    if old is None:
        return bool(new.windows) or new.give_back or new.login or new.paused_until is not None
    return any(getattr(old, name) != getattr(new, name) for name in _ACTING)


def deliveries(plans: Mapping[str, Plan], sent: Mapping[str, Mapping[str, Budget]]
               ) -> dict[str, dict[str, Budget]]:
    """{node: {identity: Budget}}: the planned Budgets that change what a node may do, by what it was sent last."""
    out: dict[str, dict[str, Budget]] = {}
    for identity, plan in plans.items():
        for node, budget in plan.budgets.items():
            if changes_use(sent.get(node, {}).get(identity), budget):
                out.setdefault(node, {})[identity] = budget
    return out


def awaited(sent: Mapping[str, Mapping[str, Budget]], uses: Mapping[str, Mapping[str, IdentityUse]]
            ) -> frozenset[str]:
    """The nodes asked to give a slot back (their last Budget says so) whose latest use does not say they did:
    the next holder waits for their answer, so a round asks for it."""
    out = set()
    for node, budgets in sent.items():
        for identity, budget in budgets.items():
            if not budget.give_back:
                continue
            use = uses.get(node, {}).get(identity)
            if use is None or use.released_gen is None or use.released_gen < budget.gen:
                out.add(node)
    return frozenset(out)


def delivered(held: Mapping[str, Budget], budgets: Mapping[str, Budget]) -> dict[str, Budget]:
    """A node's Budgets once it applied `budgets` (a poll's or a round's): a node keeps the Budgets of identities
    a delivery does not name."""
    return {**held, **budgets}
