"""Quota leases in the poll tick (docs/quotas.md). Before the polls: plan this tick's leases and write
them ahead, so that a hub crash never forgets a grant a spawn may have received. After the polls:
learn from the reports (applied generations, counts, copies running without a lease).
The arithmetic is blackwidow.quotas; the SQL is blackwidow.store.leases.
"""
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime

from blackwidow import quotas, tenant_limits
from blackwidow.quotas import Dynamics, Params, Reported, SubLease
from blackwidow.spawn_client import DEFAULT_TIMEOUT
from blackwidow.store import leases as store
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
    before: store.LeaseSnapshot            # as loaded
    states: dict[str, SubLease]            # after this tick's grants (already written)
    renewing: frozenset[tuple[str, str]]   # (subscription, node) whose lease this tick's polls carry
    per_node: dict[str, dict[str, Lease]]  # what each node's poll carries
    reserved: dict[str, int]               # per tenant, as written
    params: Params
    now: float

    def for_node(self, node_id: str) -> dict[str, Lease]:
        return self.per_node.get(node_id, {})


def params_for(config: HubConfig) -> Params:
    margin = sum(DEFAULT_TIMEOUT) + config.poll_interval_s
    return Params(ttl_s=config.detach_after_s, margin_s=margin,
                  settle_s=max(config.detach_after_s, config.orphan_after_s)
                  + config.node_failures * config.poll_interval_s + margin,
                  horizon_s=3 * config.poll_interval_s)


def grant(sessionmaker, snap: Snapshot, live_ids: frozenset[str], config: HubConfig, at: datetime,
          memory: QuotaMemory) -> LeaseRound:
    """Plan the leases the polls of this tick carry to `live_ids`, and commit them before they leave."""
    p = params_for(config)
    now = at.timestamp()
    with sessionmaker.begin() as session:
        before = store.load(session)
    by_tenant: dict[str, dict[str, SubLease]] = {}
    for sid, st in before.states.items():
        by_tenant.setdefault(st.tenant_id, {})[sid] = st
    subs: dict[str, list[quotas.Sub]] = {}
    for sid, sub in snap.subscriptions.items():
        assignment = snap.assignments.get(sid)
        # only where the node acknowledged the subscription: a lease for an absent one is refused for good
        runs = tenant_limits.scheduled(sub.enabled, sub.state, sub.spec.quota, sub.revisions) \
            and assignment is not None and assignment.acked \
            and assignment.node_id in live_ids
        subs.setdefault(sub.spec.tenant_id, []).append(
            quotas.Sub(sid, used=sub.revisions, quota=sub.spec.quota, node=assignment.node_id if runs else None))

    states: dict[str, SubLease] = {}
    leases: dict[str, dict[str, Lease]] = {}
    reserved: dict[str, int] = {}
    for tenant_id, tenant in before.tenants.items():
        if tenant.quota is None:
            reserved[tenant_id] = 0
            continue
        frozen = tenant.unleased_at is not None and now < store.epoch(tenant.unleased_at) + p.settle_s
        plan = quotas.plan_tenant(tenant_id, tenant.quota, frozen, subs.get(tenant_id, ()),
                                  by_tenant.get(tenant_id, {}), memory.dynamics, now, p)
        states.update(plan.states)
        reserved[tenant_id] = plan.reserved
        for sid, (node, gen, cap) in plan.leases.items():
            leases.setdefault(node, {})[sid] = Lease(cap=cap, ttl_s=p.ttl_s, gen=gen)
            old = before.states.get(sid)
            if old is None or old.gen != gen:
                logger.debug("quota.lease", extra={"subscription": sid, "node": node, "gen": gen, "cap": cap,
                                                   "used": plan.states[sid].seen})
        if plan.unmet and not frozen and plan.reserved >= tenant.quota:
            logger.debug("quota.exhausted", extra={"tenant": tenant_id, "quota": tenant.quota, "unmet": plan.unmet})
    existing = set(snap.subscriptions)
    for sid, st in before.states.items():
        if sid in states:
            continue
        st = quotas.expire(st, now, p)       # a tenant without quota now: its old leases just run out
        if st.holders or sid in existing:    # an existing subscription keeps its generation counter
            states[sid] = st
    renewing = frozenset((sid, node) for node, granted in leases.items() for sid in granted)
    if before.tenants or before.states:
        with sessionmaker.begin() as session:
            store.save(session, before, states, renewing)
            # only the nodes these polls carry leases to: every renewing holder is on one of them
            store.stamp_nodes(session, leases, at)
            store.save_tenants(session, {t: {"reserved": r} for t, r in reserved.items()
                                         if before.tenants[t].reserved != r})
    written = {t: before.tenants[t].reserved for t in before.tenants} | reserved
    return LeaseRound(before, states, renewing, leases, written, p, now)


def learn(session, lease_round: LeaseRound, snap: Snapshot, reports: dict[str, StatusReport],
          failed: set[str], at: datetime, memory: QuotaMemory) -> None:
    """Apply what the nodes answered. Runs in the caller's transaction."""
    if not lease_round.before.tenants and not lease_round.states:
        return                      # no quota anywhere: nothing to learn
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
            if tenants.get(tenant_id) is not None and tenants[tenant_id].quota is not None \
                    and not (entry.spec or {}).get("leased", False):
                unleased.add(tenant_id)
            st = states.get(sid)
            if st is None:
                continue
            reported = _reported(entry)
            states[sid] = quotas.note_count(st, reported)
            if node in st.holders:
                memory.dynamics[sid] = quotas.track(memory.dynamics.get(sid), reported, now, p)
    for sid in set(memory.dynamics) - set(states):
        del memory.dynamics[sid]
    store.save(session, _as_snapshot(lease_round), states, lease_round.renewing)
    changes = {t: {"unleased_at": at} for t in unleased}
    for tenant_id, total in _reserved(snap, states, tenants).items():
        if lease_round.reserved.get(tenant_id) != total:
            changes.setdefault(tenant_id, {})["reserved"] = total
    for tenant_id in sorted(unleased):
        logger.warning("quota.unleased_copy", extra={"tenant": tenant_id})
    store.save_tenants(session, changes)


def _reserved(snap: Snapshot, states: dict[str, SubLease], tenants: dict[str, store.TenantQuota]) -> dict[str, int]:
    """Sum of charges per tenant with a quota."""
    totals = {t: 0 for t, tenant in tenants.items() if tenant.quota is not None}
    for sid, sub in snap.subscriptions.items():
        if sub.spec.tenant_id in totals:
            totals[sub.spec.tenant_id] += quotas.charge_of(states.get(sid), sub.revisions)
    for sid, st in states.items():
        if sid not in snap.subscriptions and st.tenant_id in totals:
            totals[st.tenant_id] += st.charge()
    return totals


def _as_snapshot(lease_round: LeaseRound) -> store.LeaseSnapshot:
    """What the database holds after grant() wrote its states."""
    return store.LeaseSnapshot(lease_round.before.tenants, lease_round.states, lease_round.renewing)


def _reported(entry: SubscriptionStatus) -> Reported:
    quota = (entry.spec or {}).get("quota")
    lease = entry.lease
    return Reported(count=entry.revisions, running=entry.state == "running",
                    quota=quota if isinstance(quota, int) and not isinstance(quota, bool) else None,
                    lease_gen=lease.gen if lease else None, lease_cap=lease.cap if lease else None,
                    synced=bool(lease and lease.synced), caught_up=bool(lease and lease.caught_up))


def mark_leased(session, snap: Snapshot) -> Snapshot:
    """The snapshot with `leased` set on the specs of tenants that have a quota."""
    tenants = store.leased_subscription_tenants(session)
    if not tenants:
        return snap
    subs = {sid: replace(sub, spec=replace(sub.spec, leased=True)) if sub.spec.tenant_id in tenants else sub
            for sid, sub in snap.subscriptions.items()}
    return replace(snap, subscriptions=subs)
