"""Quota leases in the poll tick (docs/quotas.md), pure: no SQL, no clock. Before the polls, `plan_grants`
gives this tick's leases (the tick writes them ahead, so that a hub crash never forgets a grant a spawn may
have received). After the polls, `learn` turns the answers (applied generations, counts, copies running
without a lease) into the states and tenant columns the tick writes. The arithmetic is
blackwidow.quota.arithmetic; the SQL is blackwidow.quota.store.
"""
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Mapping

from blackwidow.quota import arithmetic as quotas, limits
from blackwidow.quota.arithmetic import Dynamics, Params, Reported, SubLease
from blackwidow.quota.store import LeaseSnapshot, TenantQuota, epoch
from blackwidow.spawn_client import DEFAULT_TIMEOUT
from blackwidow.store.coordination import Snapshot
from shared.config import HubConfig
from shared.wire import Lease, StatusReport, SubscriptionStatus

logger = logging.getLogger(__name__)


@dataclass
class QuotaMemory:
    """What the scheduler keeps between ticks for quotas: consumption rates only (never safety state)."""
    dynamics: dict[str, Dynamics] = field(default_factory=dict)


@dataclass(frozen=True)
class LeaseRound:
    before: LeaseSnapshot                  # as loaded
    states: dict[str, SubLease]            # after this tick's grants (to be written before the polls)
    renewing: frozenset[tuple[str, str]]   # (subscription, node) whose lease this tick's polls carry
    per_node: dict[str, dict[str, Lease]]  # what each node's poll carries
    reserved: dict[str, int]               # per tenant, after the grants
    params: Params
    now: float

    def for_node(self, node_id: str) -> dict[str, Lease]:
        return self.per_node.get(node_id, {})

    @property
    def any(self) -> bool:
        return bool(self.before.tenants or self.before.states)

    def tenant_changes(self) -> dict[str, dict]:
        """Tenant columns to write with the grants."""
        return {t: {"reserved": r} for t, r in self.reserved.items() if self.before.tenants[t].reserved != r}


@dataclass(frozen=True)
class Learnt:
    states: dict[str, SubLease]            # to be written over the round's states
    tenants: dict[str, dict]               # {tenant id: {column: value}}


def params_for(config: HubConfig) -> Params:
    # a poll is answered within the client's timeouts, and a lease's deadline is honoured within the skew
    margin = sum(DEFAULT_TIMEOUT) + config.poll_interval_s + config.max_clock_skew_s
    return Params(ttl_s=config.detach_after_s, margin_s=margin,
                  settle_s=max(config.detach_after_s, config.orphan_after_s)
                  + config.node_failures * config.poll_interval_s + margin,
                  horizon_s=3 * config.poll_interval_s)


def leased_tenants(before: LeaseSnapshot) -> frozenset[str]:
    return frozenset(t for t, q in before.tenants.items() if q.quota is not None)


def mark_leased(snap: Snapshot, tenants: frozenset[str]) -> Snapshot:
    """The snapshot with `leased` set on the specs of tenants that have a quota."""
    if not tenants:
        return snap
    subs = {sid: replace(sub, spec=replace(sub.spec, leased=True)) if sub.spec.tenant_id in tenants else sub
            for sid, sub in snap.subscriptions.items()}
    return replace(snap, subscriptions=subs).with_index_of(snap)


def plan_grants(before: LeaseSnapshot, snap: Snapshot, live_ids: frozenset[str], p: Params, now: float,
                memory: QuotaMemory) -> LeaseRound:
    """The leases the polls of this tick carry to `live_ids`."""
    if _unmetered(before):
        return LeaseRound(before, {}, frozenset(), {}, {t: 0 for t in before.tenants}, p, now)
    by_tenant: dict[str, dict[str, SubLease]] = {}
    for sid, st in before.states.items():
        by_tenant.setdefault(st.tenant_id, {})[sid] = st
    subs: dict[str, list[quotas.Sub]] = {}
    metered = {tenant_id for tenant_id, tenant in before.tenants.items() if tenant.quota is not None}
    for sid, sub in snap.subscriptions.items():
        if sub.spec.tenant_id not in metered:
            continue                 # leases only for tenants with a quota: most subscriptions cost a lookup
        assignment = snap.assignments.get(sid)
        # only where the node acknowledged the subscription: a lease for an absent one is refused for good
        runs = limits.scheduled(sub.enabled, sub.state, sub.spec.quota, sub.revisions)
        runs_on = assignment.node_id if runs and assignment is not None and assignment.acked \
            and assignment.node_id in live_ids else None
        subs.setdefault(sub.spec.tenant_id, []).append(
            quotas.Sub(sid, used=sub.revisions, quota=sub.spec.quota, node=runs_on))

    states: dict[str, SubLease] = {}
    leases: dict[str, dict[str, Lease]] = {}
    reserved: dict[str, int] = {}
    for tenant_id, tenant in before.tenants.items():
        if tenant.quota is None:
            reserved[tenant_id] = 0
            continue
        frozen = tenant.unleased_at is not None and now < epoch(tenant.unleased_at) + p.settle_s
        plan = quotas.plan_tenant(tenant_id, tenant.quota, frozen, subs.get(tenant_id, ()),
                                  by_tenant.get(tenant_id, {}), memory.dynamics, now, p)
        states.update(plan.states)
        reserved[tenant_id] = plan.reserved
        _check(tenant, plan.reserved, snap, plan.states, "grants", before.states, {})
        for sid, (node, gen, cap) in plan.leases.items():
            # the deadline is absolute, in hub time: a poll that arrives late does not extend it
            leases.setdefault(node, {})[sid] = Lease(cap=cap, ttl_s=p.ttl_s, gen=gen, expires_at=now + p.ttl_s)
        if plan.unmet and not frozen and plan.reserved >= tenant.quota:
            logger.debug("quota.exhausted", extra={"tenant": tenant_id, "quota": tenant.quota, "unmet": plan.unmet})
    existing = set(snap.subscriptions)
    for sid, st in before.states.items():
        if sid in states:
            continue
        st = quotas.expire(st, now, p)       # a tenant without quota now: its old leases just run out
        if st.holders:                       # a deleted subscription's state goes with its last holder
            states[sid] = st
        elif sid in existing:                # an existing one keeps its generation counter
            states[sid] = st
    renewing = frozenset((sid, node) for node, granted in leases.items() for sid in granted)
    return LeaseRound(before, states, renewing, leases, reserved, p, now)


def learn(lease_round: LeaseRound, snap: Snapshot, reports: Mapping[str, StatusReport], failed: set[str],
          at: datetime, memory: QuotaMemory) -> Learnt:
    """What the nodes' answers change. Updates `memory` (rates only)."""
    if not lease_round.any and not lease_round.states:
        return Learnt({}, {})
    if _unmetered(lease_round.before):
        memory.dynamics.clear()
        return Learnt({}, {})
    p, now = lease_round.params, lease_round.now
    states = dict(lease_round.states)
    entries = {node: {s.id: s for s in report.subscriptions} for node, report in reports.items()}
    for sid, st in states.items():
        for node in list(st.holders):
            if node in reports or node in failed:
                entry = entries.get(node, {}).get(sid)
                st = quotas.observe(st, node, node in reports, (sid, node) in lease_round.renewing,
                                    _reported(entry) if entry is not None else None, now, p,
                                    boot=reports[node].boot_id if node in reports else None)
        states[sid] = st
    tenants = lease_round.before.tenants
    unleased = set()
    for node, by_id in entries.items():
        for sid, entry in by_id.items():
            sub = snap.subscriptions.get(sid)
            tenant_id = sub.spec.tenant_id if sub is not None else (entry.spec or {}).get("tenant_id")
            tenant = tenants.get(tenant_id) if isinstance(tenant_id, str) else None
            if tenant is not None and tenant.quota is not None and not (entry.spec or {}).get("leased", False):
                unleased.add(tenant.id)
            held = states.get(sid)
            if held is None:
                continue
            reported = _reported(entry)
            states[sid] = quotas.note_count(held, reported)
            if node in held.holders:
                memory.dynamics[sid] = quotas.track(memory.dynamics.get(sid), reported, now, p)
    existing = set(snap.subscriptions)
    # a deleted subscription whose last holder just left: nothing can spend it any more
    states = {sid: st for sid, st in states.items() if st.holders or sid in existing}
    for sid in set(memory.dynamics) - set(states):
        del memory.dynamics[sid]
    changes: dict[str, dict] = {}
    for tenant_id in sorted(unleased):
        logger.warning("quota.unleased_copy", extra={"tenant": tenant_id})
        # never earlier than a moment already recorded (the admin API sets it when a quota appears)
        since = tenants[tenant_id].unleased_at
        if since is None or epoch(since) < at.timestamp():
            changes[tenant_id] = {"unleased_at": at}
    for tenant_id, total in _reserved(snap, states, tenants).items():
        if lease_round.reserved.get(tenant_id, tenants[tenant_id].reserved) != total:
            changes.setdefault(tenant_id, {})["reserved"] = total
        _check(tenants[tenant_id], total, snap, states, "learn", lease_round.states, entries)
    return Learnt(states, changes)


def _unmetered(before: LeaseSnapshot) -> bool:
    """No tenant has a quota and no lease is still out: nothing to grant or learn. Saves a pass over every
    subscription and every reported status each tick (seconds at a million)."""
    return not before.states and all(t.quota is None for t in before.tenants.values())


def _check(tenant: TenantQuota, total: int, snap: Snapshot, states: Mapping[str, SubLease], where: str,
           before: Mapping[str, SubLease], entries: Mapping[str, Mapping[str, SubscriptionStatus]]) -> None:
    """Log the charges when a tenant's reserved total exceeds its quota: the arithmetic promises it never
    does (docs/quotas.md), so this names each charge's parts, before and after, and what nodes reported."""
    if tenant.quota is None or total <= tenant.quota:
        return
    parts = {}
    for sid, st in states.items():
        if st.tenant_id != tenant.id:
            continue
        sub = snap.subscriptions.get(sid)
        parts[sid] = {"used": sub.revisions if sub is not None else None, "now": _parts(st),
                      "was": _parts(before.get(sid)),
                      "reports": {node: [e.revisions, *([e.lease.gen, e.lease.cap, e.lease.synced] if e.lease else [])]
                                  for node, by_id in entries.items() if (e := by_id.get(sid)) is not None}}
    logger.error("quota.over_reserved", extra={"tenant": tenant.id, "quota": tenant.quota, "reserved": total,
                                               "where": where, "charges": parts})


def _reserved(snap: Snapshot, states: Mapping[str, SubLease],
              tenants: Mapping[str, TenantQuota]) -> dict[str, int]:
    """Sum of charges per tenant with a quota."""
    totals = {t: 0 for t, tenant in tenants.items() if tenant.quota is not None}
    for sid, sub in snap.subscriptions.items():
        if sub.spec.tenant_id in totals:
            totals[sub.spec.tenant_id] += quotas.charge_of(states.get(sid), sub.revisions)
    for sid, st in states.items():
        if sid not in snap.subscriptions and st.tenant_id in totals:
            totals[st.tenant_id] += st.charge()
    return totals


def _reported(entry: SubscriptionStatus) -> Reported:
    quota = (entry.spec or {}).get("quota")
    lease = entry.lease
    return Reported(count=entry.revisions, running=entry.state == "running",
                    quota=quota if isinstance(quota, int) and not isinstance(quota, bool) else None,
                    lease_gen=lease.gen if lease else None, lease_cap=lease.cap if lease else None,
                    synced=bool(lease and lease.synced), caught_up=bool(lease and lease.caught_up))


def _parts(st: SubLease | None) -> dict | None:
    """seen, floor, gen and {node: [gen, cap, held, confirmed, acked]}."""
    if st is None:
        return None
    return {"seen": st.seen, "floor": st.floor, "gen": st.gen,
            "holders": {n: [h.gen, h.cap, h.held, h.confirmed, h.acked] for n, h in st.holders.items()}}
