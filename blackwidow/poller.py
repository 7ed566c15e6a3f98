"""The poll tick: poll every live node, record liveness and statuses, route, plan, send, record.

poll_once is a plain function (tests call it directly; scheduler.py only schedules it). Every node is
handled in isolation: one that times out or answers nonsense never stops the tick for the others.
No transaction is held across HTTP calls: read a snapshot, talk to nodes, write the outcome.
"""
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from blackwidow.store import coordination as store
from blackwidow import leasing, reload, router, sends, tenant_limits
from blackwidow.store.coordination import AssignmentView, Snapshot, SubscriptionView
from blackwidow.metrics import SchedulerMetrics
from blackwidow.spawn_client import SpawnClient, SpawnError
from blackwidow.tick_gc import without_cyclic_gc
from shared.config import HubConfig
from shared.wire import Poll, StatusReport

logger = logging.getLogger(__name__)

MAX_WORKERS = 32
# A subscription its node reports failed is re-sent at most this often, not on every tick.
FAILED_RESEND_AFTER_S = 30.0
NODE_STATES = frozenset({"assigned", "running", "waiting", "failed", "limit_reached"})   # what a node may report


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class PollerState:
    """What a scheduler process remembers between ticks: the node set it last routed over,
    only to label reloads hard or soft. A fresh process starts empty; the database holds the rest."""
    routed_nodes: frozenset[str] | None = None
    quota: leasing.QuotaMemory = field(default_factory=leasing.QuotaMemory)


@dataclass(frozen=True)
class TickResult:
    polled: int
    failed: tuple[str, ...]          # nodes whose poll failed this tick
    removed: tuple[str, ...]         # nodes marked dead this tick
    live: tuple[str, ...]
    kind: str | None                 # hard | soft | None
    sent: int
    send_failures: int
    dropped: int
    drop_failures: int
    adopted: int
    seconds: float


@without_cyclic_gc
def poll_once(sessionmaker, spawn_client: SpawnClient, config: HubConfig,
              now: Callable[[], datetime] = utcnow, *, state: PollerState | None = None,
              metrics: SchedulerMetrics | None = None) -> TickResult:
    """One tick. Idempotent: run it again and nodes that already run the right specs get nothing.
    Database errors propagate (the scheduler logs them and tries again next tick)."""
    started = time.monotonic()
    metrics = metrics or SchedulerMetrics()
    at = now()
    with sessionmaker.begin() as session:
        snap = leasing.mark_leased(session, store.load_snapshot(session))
    live = sorted((n for n in snap.nodes.values() if n.state == store.LIVE), key=lambda n: n.id)
    quota_memory = state.quota if state is not None else leasing.QuotaMemory()
    # leases are written before the polls carry them: a crash must not forget a grant
    leases = leasing.grant(sessionmaker, snap, frozenset(n.id for n in live), config, at, quota_memory)

    reports, failures = _poll_nodes(spawn_client, live, snap, metrics, leases)
    removed = sorted(nid for nid, count in failures.items() if count >= config.node_failures)
    for node_id in removed:
        logger.warning("node.removed", extra={"node": node_id, "url": snap.nodes[node_id].url,
                                              "failures": failures[node_id]})
    with sessionmaker.begin() as session:
        store.record_node_polls(session, at, ok={nid: r.boot_id for nid, r in reports.items()},
                                failed=failures, dead=removed)
    try:
        with sessionmaker.begin() as session:
            leasing.learn(session, leases, snap, reports, set(failures), at, quota_memory)
    except Exception:
        # unlearnt answers only keep more reserved than needed; the next tick learns again
        metrics.tick_errors.inc()
        logger.exception("quota.learn_failed")
    live_ids = frozenset(n.id for n in live) - set(removed)

    status = _status_changes(snap, reports)
    current_state = {sid: status.get(sid, {}).get("state", sub.state) for sid, sub in snap.subscriptions.items()}
    revisions = {sid: status.get(sid, {}).get("revisions", sub.revisions) for sid, sub in snap.subscriptions.items()}
    # a redirect's subscription routes as its target's once a spawn reported the resolved article
    schedulable = {sid: status.get(sid, {}).get("page_key") or sub.route_key
                   for sid, sub in snap.subscriptions.items()
                   if tenant_limits.scheduled(sub.enabled, current_state[sid], sub.spec.quota, revisions[sid])}
    used_up = tenant_limits.exhausted({t: q.quota for t, q in leases.before.tenants.items()},
                                      ((sub.spec.tenant_id, revisions[sid]) for sid, sub in snap.subscriptions.items()))
    routes = router.assign(schedulable, live_ids, config.routing)
    desired = {sid: (node, snap.subscriptions[sid].spec) for sid, node in routes.items()}
    previous = state.routed_nodes if state is not None and state.routed_nodes is not None \
        else frozenset(n.id for n in live)
    reported = {nid: {s.id: s for s in r.subscriptions} for nid, r in reports.items()}
    acked = {sid: a.node_id for sid, a in snap.assignments.items() if a.acked}
    retry_failed = {sid for sid in desired if _resend_due(snap.assignments.get(sid), at)}
    plan = reload.plan(desired, reported, acked, live_ids != previous, retry_failed)
    if plan.kind:
        logger.info("reload.planned", extra={"kind": plan.kind, "puts": len(plan.puts), "drops": len(plan.drops),
                                             "adopts": len(plan.adopts), "reasons": plan.reasons})

    outcomes = _execute(spawn_client, plan, snap, metrics)
    final = _final_assignments(snap, live_ids, reported, desired, plan, outcomes, at)
    changes = _subscription_changes(snap, status, current_state, final, plan, outcomes, reported, used_up)
    try:
        with sessionmaker.begin() as session:
            _record(session, snap, final, changes, plan, live_ids, previous, at)
    except Exception:
        # sends already happened; the next tick adopts what the nodes report
        metrics.tick_errors.inc()
        logger.exception("tick.record_failed")
    if state is not None:
        state.routed_nodes = live_ids

    puts = [o for o in outcomes if isinstance(o.action, reload.Put)]
    drops = [o for o in outcomes if isinstance(o.action, reload.Drop)]
    if plan.kind:
        metrics.reloads.labels(plan.kind).inc()
    metrics.adoptions.inc(len(plan.adopts))
    metrics.nodes_removed.inc(len(removed))
    metrics.live_nodes.set(len(live_ids))
    result = TickResult(polled=len(live), failed=tuple(sorted(failures)), removed=tuple(removed),
                        live=tuple(sorted(live_ids)), kind=plan.kind,
                        sent=sum(o.ok for o in puts), send_failures=sum(not o.ok for o in puts),
                        dropped=sum(o.ok for o in drops), drop_failures=sum(not o.ok for o in drops),
                        adopted=len(plan.adopts), seconds=time.monotonic() - started)
    metrics.tick_seconds.observe(result.seconds)
    logger.debug("tick.done", extra=vars(result))
    return result


def _each(fn, items: list) -> list:
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(items)), thread_name_prefix="bw-poll") as pool:
        return list(pool.map(fn, items))


def _poll_nodes(client: SpawnClient, live: list[store.NodeView], snap: Snapshot, metrics: SchedulerMetrics,
                leases: leasing.LeaseRound) -> tuple[dict[str, StatusReport], dict[str, int]]:
    """Poll concurrently. Returns ({node_id: report} for answers, {node_id: consecutive failures})."""
    assigned: dict[str, list[str]] = {}
    for sub_id, assignment in snap.assignments.items():
        assigned.setdefault(assignment.node_id, []).append(sub_id)

    def poll(node: store.NodeView):
        began = time.monotonic()
        try:
            report = client.poll(node.url, Poll(node_id=node.id, assigned=tuple(sorted(assigned.get(node.id, ()))),
                                                leases=leases.for_node(node.id)))
            if report.node_id is not None and report.node_id != node.id:
                raise SpawnError(f"answered as node {report.node_id}", node_url=node.url)
            return node, report
        except SpawnError as exc:
            return node, exc
        except Exception as exc:       # a bug must cost one node's poll, not the tick
            logger.exception("node.poll_error", extra={"node": node.id})
            return node, exc
        finally:
            metrics.poll_seconds.observe(time.monotonic() - began)

    reports, failures = {}, {}
    for node, outcome in _each(poll, live):
        if isinstance(outcome, StatusReport):
            metrics.polls.labels("ok").inc()
            reports[node.id] = outcome
            if node.boot_id is not None and outcome.boot_id != node.boot_id:
                logger.info("node.restarted", extra={"node": node.id, "url": node.url})
        else:
            metrics.polls.labels("failed").inc()
            failures[node.id] = node.consecutive_failures + 1
            logger.warning("node.poll_failed", extra={"node": node.id, "url": node.url, "error": str(outcome),
                                                      "failures": failures[node.id]})
    return reports, failures


def _status_changes(snap: Snapshot, reports: dict[str, StatusReport]) -> dict[str, dict]:
    """Reported state and counters, taken only from the node the subscription is assigned to
    (a copy still being dropped elsewhere must not overwrite them)."""
    changes: dict[str, dict] = {}
    for node_id, report in reports.items():
        for reported in report.subscriptions:
            sub = snap.subscriptions.get(reported.id)
            if sub is None or not sub.enabled or reported.state not in NODE_STATES:
                continue
            assignment = snap.assignments.get(reported.id)
            owner = assignment.node_id if assignment is not None else sub.node_id
            if owner != node_id:
                continue
            changes[reported.id] = {
                "state": reported.state,
                # counters never go back, even when a node restarts or the subscription moved
                "revisions": max(sub.revisions, reported.revisions),
                "last_rev_id": reported.last_rev_id if reported.last_rev_id is not None else sub.last_rev_id,
                "last_error": reported.last_error,
                # a key once known stays (a spawn that has not resolved the title yet reports none)
                "page_key": reported.page_key or sub.page_key,
            }
    return changes


def _resend_due(assignment: AssignmentView | None, at: datetime) -> bool:
    if assignment is None or assignment.sent_at is None:
        return True
    return (at - assignment.sent_at).total_seconds() >= FAILED_RESEND_AFTER_S


def _execute(client: SpawnClient, plan: reload.Plan, snap: Snapshot,
             metrics: SchedulerMetrics) -> list[sends.Outcome]:
    """Send each node its drops then its puts in batched requests (blackwidow.sends), nodes concurrently."""
    drops: dict[str, list[reload.Drop]] = {}
    puts: dict[str, list[reload.Put]] = {}
    for drop in plan.drops:
        drops.setdefault(drop.node_id, []).append(drop)
    for put in plan.puts:
        puts.setdefault(put.node_id, []).append(put)

    def send(node_id: str) -> list[sends.Outcome]:
        return sends.send_to_node(client, node_id, snap.nodes[node_id].url, drops.get(node_id, ()),
                                  puts.get(node_id, ()), metrics)

    return [o for batch in _each(send, sorted(drops.keys() | puts.keys())) for o in batch]


def _final_assignments(snap: Snapshot, live_ids: frozenset[str], reported: dict, desired: dict,
                       plan: reload.Plan, outcomes: list[sends.Outcome],
                       at: datetime) -> dict[str, AssignmentView]:
    """The assignment table after this tick: what each subscription was sent to, and whether acked."""
    final = {}
    for sub_id, a in snap.assignments.items():
        if a.node_id not in live_ids:
            continue                     # dead node: whatever ran there is gone for us
        on_node = reported.get(a.node_id)
        if on_node is not None and sub_id not in on_node and desired.get(sub_id, (None,))[0] != a.node_id:
            continue                     # the node answered without it and it is not wanted there
        final[sub_id] = a
    for o in outcomes:
        if isinstance(o.action, reload.Drop) and o.ok:
            if final.get(o.action.subscription_id, AssignmentView("", False, None)).node_id == o.action.node_id:
                del final[o.action.subscription_id]
    for adopt in plan.adopts:
        previous = snap.assignments.get(adopt.subscription_id)
        final[adopt.subscription_id] = AssignmentView(adopt.node_id, True, previous.sent_at if previous else at)
    for o in outcomes:
        if isinstance(o.action, reload.Put):
            final[o.action.spec.id] = AssignmentView(o.action.node_id, o.ok, at)
    return final


def _subscription_changes(snap: Snapshot, status: dict[str, dict], current_state: dict[str, str],
                          final: dict[str, AssignmentView], plan: reload.Plan, outcomes: list[sends.Outcome],
                          reported: dict, used_up: dict[str, str]) -> dict[str, dict]:
    """Column values that differ from the snapshot: reported counters plus node_id/state (limit_reached
    with the tenant's numbers where its quota is used up)."""
    ack_state = {o.action.spec.id: o.state for o in outcomes if isinstance(o.action, reload.Put) and o.ok}
    adopted_state = {a.subscription_id: reported[a.node_id][a.subscription_id].state for a in plan.adopts}
    changes = {}
    for sub_id, sub in snap.subscriptions.items():
        node_id, state = _placement(sub, current_state[sub_id], final.get(sub_id),
                                    ack_state.get(sub_id) or adopted_state.get(sub_id))
        state, tenant_reason = tenant_limits.shown(state, used_up.get(sub.spec.tenant_id))
        values = {**status.get(sub_id, {}), "node_id": node_id, "state": state}
        if tenant_reason is not None:
            values["last_error"] = tenant_reason
        diff = {k: v for k, v in values.items() if getattr(sub, k) != v}
        if diff:
            changes[sub_id] = diff
    return changes


def _placement(sub: SubscriptionView, state: str, assignment: AssignmentView | None,
               answered_state: str | None) -> tuple[str | None, str]:
    """(node_id, state) a subscription row shows after the tick."""
    node_id = assignment.node_id if assignment is not None else None
    if not sub.enabled:
        return node_id, "disabled"
    if state == "limit_reached":
        return node_id, state
    if assignment is None:
        return None, "pending"
    if assignment.acked:
        state = answered_state or state
        return node_id, state if state in NODE_STATES else "assigned"
    if sub.node_id == node_id:
        return node_id, state            # an update in place failed: the old spec still runs there
    return None, "pending"


def _record(session, snap: Snapshot, final: dict[str, AssignmentView], changes: dict[str, dict],
            plan: reload.Plan, live_ids: frozenset[str], previous: frozenset[str], at: datetime) -> None:
    upserts = {sid: a for sid, a in final.items() if snap.assignments.get(sid) != a}
    deletes = [sid for sid in snap.assignments if sid not in final]
    present = store.lock_existing_subscriptions(session, set(upserts) | set(changes))
    store.save_assignments(session, {sid: a for sid, a in upserts.items() if sid in present}, deletes)
    store.update_subscriptions(session, {sid: c for sid, c in changes.items() if sid in present}, snap.subscriptions)
    if plan.kind:
        if plan.kind == reload.HARD:
            reason = f"nodes: +{len(live_ids - previous)} -{len(previous - live_ids)}, now {len(live_ids)}"
        else:
            reason = ", ".join(f"{k}={v}" for k, v in sorted(plan.reasons.items()))
        store.record_reload(session, plan.kind, reason, sends=len(plan.puts), drops=len(plan.drops), at=at)
