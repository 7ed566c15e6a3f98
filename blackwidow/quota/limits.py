"""A tenant whose quota is used up: its subscriptions show `limit_reached`, like one that reached its own
quota, with the tenant's numbers in `last_error`.

Unlike a subscription's own limit, the tenant's does not end the subscription's placement: its spawn
keeps it, reports the counts the lease arithmetic settles on (docs/quotas.md), and goes on at the next
lease once the quota is raised. So only a subscription's own limit (or disabling it) takes it off its node.
"""
from typing import Iterable, Mapping

LIMIT_REACHED = "limit_reached"
# What a node may report while the subscription can still be delivered revisions.
_ACTIVE = frozenset({"assigned", "running", "waiting"})


def own_limit_reached(quota: int | None, revisions: int) -> bool:
    return quota is not None and revisions >= quota


def scheduled(enabled: bool, state: str, quota: int | None, revisions: int) -> bool:
    """Whether the subscription belongs on a node."""
    if not enabled or state == "disabled":
        return False
    return not (state == LIMIT_REACHED and own_limit_reached(quota, revisions))


def exhausted(quotas: Mapping[str, int | None], usage: Iterable[tuple[str, int]]) -> dict[str, str]:
    """Tenant id -> the reason its subscriptions show, for every tenant whose quota is used up.
    `usage` is (tenant id, revisions) per subscription."""
    used: dict[str, int] = {}
    for tenant_id, revisions in usage:
        used[tenant_id] = used.get(tenant_id, 0) + revisions
    return {tenant_id: f"tenant quota used up: {used.get(tenant_id, 0):,} of {quota:,} revisions"
            for tenant_id, quota in quotas.items()
            if quota is not None and used.get(tenant_id, 0) >= quota}


def shown(state: str, reason: str | None) -> tuple[str, str | None]:
    """(state, last_error override) of a subscription whose tenant's `reason` is None or as exhausted() gives it."""
    if reason is not None and state in _ACTIVE:
        return LIMIT_REACHED, reason
    return state, None
