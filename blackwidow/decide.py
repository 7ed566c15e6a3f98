"""The tick's rules, pure: no SQL, no HTTP, no clock (docs/coordination.md, "One tick").

    decide(snapshot, polled, leases, rules, now) -> Decision     after the polls, before the sends
    settle(snapshot, decision, outcomes, now)    -> Settlement   after the sends: what the tick writes

blackwidow.poller is the I/O shell around them: it reads the snapshot, writes the lease grants ahead,
polls, sends what `decide` planned and writes what `settle` returns, each write fenced by the leader's epoch.
Routing (blackwidow.router), reload planning (blackwidow.reload) and the lease arithmetic
(blackwidow.quota) are the pure parts these two compose.
"""
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Iterable, Iterator, Mapping

from blackwidow import rebalance, reload, router
from blackwidow.quota import leasing, limits
from blackwidow.sends import Outcome
from blackwidow.store.coordination import AssignmentView, Snapshot, SubscriptionView, LIVE
from blackwidow.upstream.clock_check import ClockReading
from shared.config import HubConfig
from shared.states import NODE_REPORTED, SubState
from shared.wire import StatusReport, SubscriptionSpec, SubscriptionStatus


@dataclass(frozen=True)
class Rules:
    node_failures: int                    # consecutive failed polls before a node is marked dead
    routing: str                          # modulo | rendezvous
    failed_retry_s: float = 30.0          # first re-send of a failed subscription; doubles on each failure
    failed_retry_max_s: float = 3600.0

    @classmethod
    def of(cls, config: HubConfig) -> "Rules":
        return cls(node_failures=config.node_failures, routing=config.routing)


@dataclass(frozen=True)
class Polled:
    """What the polls brought: answers, and the nodes whose poll failed (refused, timeout, 5xx, 4xx, an
    unparseable report, a report for another node id). `statuses`: each answer's statuses by id, when the
    caller already holds them (else built from the reports); `changed`: per answering node, the ids its
    report says changed (None: a whole report; absent: unknown, also a whole one)."""
    reports: Mapping[str, StatusReport]
    failed: frozenset[str] = frozenset()
    statuses: Mapping[str, Mapping[str, SubscriptionStatus]] | None = None
    changed: Mapping[str, frozenset[str] | None] = field(default_factory=dict)
    clocks: Mapping[str, ClockReading] = field(default_factory=dict)    # per answering node, when it said

    def by_node(self) -> Mapping[str, Mapping[str, SubscriptionStatus]]:
        if self.statuses is not None:
            return self.statuses
        return {nid: {s.id: s for s in r.subscriptions} for nid, r in self.reports.items()}


@dataclass(frozen=True)
class NodeChanges:
    ok: dict[str, str]                    # node -> boot id of its answer
    failures: dict[str, int]              # node -> consecutive failed polls now
    dead: tuple[str, ...]                 # marked dead this tick


class Specs(Mapping[str, SubscriptionSpec]):
    """The snapshot's specs by id, read through: the plan looks up a spec only for what it sends."""
    __slots__ = ("_subs",)

    def __init__(self, subscriptions: Mapping[str, SubscriptionView]):
        self._subs = subscriptions

    def __getitem__(self, sid: str) -> SubscriptionSpec:
        return self._subs[sid].spec

    def __iter__(self) -> Iterator[str]:
        return iter(self._subs)

    def __len__(self) -> int:
        return len(self._subs)


@dataclass(frozen=True)
class Decision:
    nodes: NodeChanges
    live: frozenset[str]                  # live after this tick's failures
    hard: bool                            # the live node set changed since the last routing
    status: dict[str, dict]               # per subscription: the columns its node's report changes
    state: dict[str, str]                 # per subscription: state after the reports
    used_up: dict[str, str]               # tenant -> why its subscriptions show limit_reached
    desired: dict[str, str]               # sub -> node
    reported: Mapping[str, Mapping]       # node -> {sub: SubscriptionStatus}
    plan: reload.Plan
    learnt: leasing.Learnt
    rejected: dict[str, tuple[str, ...]] = field(default_factory=dict)   # node -> unparseable report items
    # the ids this tick looked at (None: every one; blackwidow.tick_scope): `status`, `state` and `desired`
    # hold only those, and settle() writes only those
    scope: frozenset[str] | None = None


@dataclass(frozen=True)
class Settlement:
    assignments: dict[str, AssignmentView]    # changed or new rows
    deleted: tuple[str, ...]                  # assignment rows to delete
    subscriptions: dict[str, dict]            # {sub: {column: value}} that differ from the snapshot
    reload: tuple[str, str, int, int] | None  # (kind, reason, sends, drops)


def decide(snap: Snapshot, polled: Polled, leases: leasing.LeaseRound, rules: Rules, now: datetime, *,
           previous_live: frozenset[str] | None, memory: leasing.QuotaMemory,
           scope: frozenset[str] | None = None, paced: rebalance.Routing | None = None,
           memo: router.RendezvousMemo | None = None) -> Decision:
    """Everything the tick concludes from the polls: liveness, reported status, routing and the plan of sends.
    `previous_live`: the node set the last tick routed over (None: unknown, a new leader: not a hard reload).
    `memory` holds consumption rates between ticks and is updated here (never safety state).
    `scope`: look only at these ids (blackwidow.tick_scope: the rest is as the last tick left it); None: at
    every subscription. `paced`: modulo routing moving band by band (blackwidow.rebalance), its newest layer
    over `live`. `memo`: the scheduler's rendezvous memo (router.RendezvousMemo; None: none kept)."""
    nodes, live = liveness(snap, polled, rules)
    reported = polled.by_node()

    looked_at: Iterable[tuple[str, SubscriptionView]]
    if scope is None:
        status = status_changes(snap, polled.reports)
        looked_at = snap.subscriptions.items()
    else:
        status = scoped_status_changes(snap, reported, scope)
        looked_at = ((sid, snap.subscriptions[sid]) for sid in scope if sid in snap.subscriptions)
    state: dict[str, str] = {}
    revisions: dict[str, int] = {}          # the reported ones only: the rest are the rows'
    schedulable: dict[str, str] = {}
    for sid, sub in looked_at:      # one pass: a tick may hold a million subscriptions
        reported_now = status.get(sid)
        if reported_now is None:
            state[sid], count, route_key = sub.state, sub.revisions, sub.route_key
        else:
            state[sid] = reported_now.get("state", sub.state)
            count = revisions[sid] = reported_now.get("revisions", sub.revisions)
            # a redirect's subscription routes as its target's once a spawn reported the resolved article
            route_key = reported_now.get("page_key") or sub.route_key
        if limits.scheduled(sub.enabled, state[sid], sub.spec.quota, count):
            schedulable[sid] = route_key
    quotas = {t: q.quota for t, q in leases.before.tenants.items() if q.quota is not None}
    used_up = limits.exhausted(quotas, ((sub.spec.tenant_id, revisions.get(sid, sub.revisions))
                                        for sid, sub in snap.subscriptions.items()
                                        if sub.spec.tenant_id in quotas)) if quotas else {}
    routed = router.assign(schedulable, live, rules.routing, partial=scope is not None, paced=paced, memo=memo)
    desired = routed
    hard = previous_live is not None and live != previous_live
    ids = snap.assignments.keys() if scope is None else scope
    acked = {sid: a.node_id for sid in ids if (a := snap.assignments.get(sid)) is not None and a.acked}
    # only a subscription its routed node reports failed is re-sent for it: asking each of a million costs a
    # second and a set of them
    retry_failed = {sid for sid, node in desired.items()
                    if (st := reported.get(node, {}).get(sid)) is not None and st.state == SubState.FAILED
                    and failed_resend_due(snap.assignments.get(sid), now, rules)}
    plan = reload.plan(desired, Specs(snap.subscriptions), reported, acked, hard, retry_failed, only=scope)
    learnt = leasing.learn(leases, snap, polled.reports, set(polled.failed), now, memory)
    rejected = {nid: r.rejected for nid, r in polled.reports.items() if r.rejected}
    return Decision(nodes, live, hard, status, state, used_up, desired, reported, plan, learnt, rejected, scope)


def liveness(snap: Snapshot, polled: Polled, rules: Rules) -> tuple[NodeChanges, frozenset[str]]:
    """What the polls say of the nodes, and the live node set after this tick's failures."""
    polled_live = frozenset(n.id for n in snap.nodes.values() if n.state == LIVE)
    failures = {nid: snap.nodes[nid].consecutive_failures + 1 for nid in polled.failed}
    dead = tuple(sorted(nid for nid, count in failures.items() if count >= rules.node_failures))
    return NodeChanges({nid: r.boot_id for nid, r in polled.reports.items()}, failures, dead), polled_live - set(dead)


def settle(snap: Snapshot, decision: Decision, outcomes: list[Outcome], now: datetime, rules: Rules) -> Settlement:
    """What the tick writes once the sends came back."""
    final = final_assignments(snap, decision, outcomes, now, rules)
    changes = subscription_changes(snap, decision, final, outcomes)
    upserts = {sid: a for sid, a in final.items() if snap.assignments.get(sid) != a}
    looked_at = snap.assignments if decision.scope is None else \
        (sid for sid in decision.scope if sid in snap.assignments)
    deleted = tuple(sid for sid in looked_at if sid not in final)
    plan = decision.plan
    record = None
    if plan.kind:
        if plan.kind == reload.HARD:
            before = frozenset(n.id for n in snap.nodes.values() if n.state == LIVE)
            reason = f"nodes: +{len(decision.live - before)} -{len(before - decision.live)}, now {len(decision.live)}"
        else:
            reason = ", ".join(f"{k}={v}" for k, v in sorted(plan.reasons.items()))
        record = (plan.kind, reason, len(plan.puts), len(plan.drops))
    return Settlement(upserts, deleted, changes, record)


def status_changes(snap: Snapshot, reports: Mapping[str, StatusReport]) -> dict[str, dict]:
    """Reported state and counters, taken only from the node the subscription is assigned to (a copy still
    being dropped elsewhere must not overwrite them), of the subscriptions whose row they change. A state
    this version does not know is not copied."""
    changes: dict[str, dict] = {}
    for node_id, report in reports.items():
        for reported in report.subscriptions:
            values = _reported_values(snap, node_id, reported)
            if values is not None:
                changes[reported.id] = values
    return changes


def scoped_status_changes(snap: Snapshot, reported: Mapping[str, Mapping[str, SubscriptionStatus]],
                          scope: frozenset[str]) -> dict[str, dict]:
    """status_changes() of the ids in `scope` only, from each one's owner's statuses."""
    changes: dict[str, dict] = {}
    for sid in scope:
        sub = snap.subscriptions.get(sid)
        if sub is None:
            continue
        assignment = snap.assignments.get(sid)
        owner = assignment.node_id if assignment is not None else sub.node_id
        status = reported.get(owner, {}).get(sid) if owner is not None else None
        values = _reported_values(snap, owner, status) if status is not None and owner is not None else None
        if values is not None:
            changes[sid] = values
    return changes


def _reported_values(snap: Snapshot, node_id: str, reported: SubscriptionStatus) -> dict | None:
    sub = snap.subscriptions.get(reported.id)
    if sub is None or not sub.enabled:
        return None
    assignment = snap.assignments.get(reported.id)
    owner = assignment.node_id if assignment is not None else sub.node_id
    if owner != node_id:
        return None
    values = {
        # counters never go back, even when a node restarts or the subscription moved
        "revisions": max(sub.revisions, reported.revisions),
        "last_rev_id": reported.last_rev_id if reported.last_rev_id is not None else sub.last_rev_id,
        # a key once known stays (a spawn that has not resolved the title yet reports none)
        "page_key": reported.page_key or sub.page_key,
        # unknown (a restarted spawn that has not checked yet, or an older one) keeps what was proven
        "complete": sub.complete if reported.complete is None else reported.complete,
        # caught up past every change the feed routed to it (blackwidow.feed_plan)
        "settled": sub.settled if reported.settled is None else reported.settled,
    }
    if reported.state in NODE_REPORTED:
        values["state"] = reported.state
        values["last_error"] = reported.last_error
    # only the columns it changes, and a status that changes nothing is left out: at a million subscriptions
    # a whole report mostly says what the rows already hold, and a dict per row is a gigabyte
    changed = {column: value for column, value in values.items() if getattr(sub, column) != value}
    return changed or None


def failed_resend_due(assignment: AssignmentView | None, now: datetime, rules: Rules) -> bool:
    """Whether a subscription its node reports failed may be re-sent now: `failed_retry_s` after it was sent,
    then with the backoff of its earlier re-sends."""
    if assignment is None:
        return True
    if assignment.retry_at is not None:
        return now >= assignment.retry_at
    return assignment.sent_at is None or (now - assignment.sent_at).total_seconds() >= rules.failed_retry_s


def failed_retry_delay(failures: int, rules: Rules) -> float:
    """Seconds before the next re-send after `failures` re-sends of a failed subscription (2, 4, 8, ... × base):
    a title that does not exist costs the wiki a request an hour at most, not one every 30 s forever."""
    return min(rules.failed_retry_max_s, rules.failed_retry_s * 2 ** failures)


def final_assignments(snap: Snapshot, decision: Decision, outcomes: list[Outcome], now: datetime,
                      rules: Rules) -> dict[str, AssignmentView]:
    """The assignment table after this tick: what each subscription was sent to, whether acknowledged, and
    the backoff of failed ones."""
    reported, desired, plan = decision.reported, decision.desired, decision.plan
    final: dict[str, AssignmentView] = {}
    looked_at = snap.assignments.items() if decision.scope is None else \
        ((sid, snap.assignments[sid]) for sid in decision.scope if sid in snap.assignments)
    for sub_id, a in looked_at:
        if a.node_id not in decision.live:
            continue                     # dead node: whatever ran there is gone for us
        on_node = reported.get(a.node_id)
        if on_node is not None and sub_id not in on_node and desired.get(sub_id) != a.node_id:
            continue                     # the node answered without it and it is not wanted there
        status = on_node.get(sub_id) if on_node is not None else None
        if status is not None and status.state != SubState.FAILED and a.failures:
            a = AssignmentView(a.node_id, a.acked, a.sent_at)        # it recovered: the backoff starts over
        final[sub_id] = a
    for o in outcomes:
        if isinstance(o.action, reload.Drop) and o.ok:
            kept = final.get(o.action.subscription_id)
            if kept is not None and kept.node_id == o.action.node_id and o.action.reason != "failed":
                del final[o.action.subscription_id]
    for adopt in plan.adopts:
        previous = snap.assignments.get(adopt.subscription_id)
        final[adopt.subscription_id] = AssignmentView(adopt.node_id, True, previous.sent_at if previous else now)
    for o in outcomes:
        if not isinstance(o.action, reload.Put):
            continue
        sid = o.action.spec.id
        previous = final.get(sid) or snap.assignments.get(sid)
        failures = previous.failures if previous is not None and previous.node_id == o.action.node_id else 0
        if o.action.reason == "failed":
            failures += 1
        retry_at = now + timedelta(seconds=failed_retry_delay(failures, rules)) if failures else None
        final[sid] = AssignmentView(o.action.node_id, o.ok, now, failures, retry_at)
    return final


def subscription_changes(snap: Snapshot, decision: Decision, final: Mapping[str, AssignmentView],
                         outcomes: list[Outcome]) -> dict[str, dict]:
    """Column values that differ from the snapshot: reported counters plus node_id/state (limit_reached
    with the tenant's numbers where its quota is used up)."""
    ack_state = {o.action.spec.id: o.state for o in outcomes if isinstance(o.action, reload.Put) and o.ok}
    adopted_state = {a.subscription_id: decision.reported[a.node_id][a.subscription_id].state
                     for a in decision.plan.adopts}
    changes = {}
    looked_at = snap.subscriptions.items() if decision.scope is None else \
        ((sid, snap.subscriptions[sid]) for sid in decision.scope if sid in snap.subscriptions)
    for sub_id, sub in looked_at:
        node_id, state = placement(sub, decision.state[sub_id], final.get(sub_id),
                                   ack_state.get(sub_id) or adopted_state.get(sub_id))
        state, tenant_reason = limits.shown(state, decision.used_up.get(sub.spec.tenant_id))
        reported = decision.status.get(sub_id)
        values = {**(reported or {}), "node_id": node_id, "state": state}
        if tenant_reason is not None:
            values["last_error"] = tenant_reason
        diff = {k: v for k, v in values.items() if getattr(sub, k) != v}
        if diff:
            # the report's own dict when it says the same (a first report of a million): one dict, not two
            changes[sub_id] = reported if diff == reported else diff
    return changes


def placement(sub: SubscriptionView, state: str, assignment: AssignmentView | None,
              answered_state: str | None) -> tuple[str | None, str]:
    """(node_id, state) a subscription row shows after the tick."""
    node_id = assignment.node_id if assignment is not None else None
    if not sub.enabled:
        return node_id, SubState.DISABLED
    if state == SubState.LIMIT_REACHED:
        return node_id, state
    if assignment is None:
        return None, SubState.PENDING
    if assignment.acked:
        state = answered_state or state
        return node_id, state if state in NODE_REPORTED else SubState.ASSIGNED
    if sub.node_id == node_id:
        return node_id, state            # an update in place failed: the old spec still runs there
    return None, SubState.PENDING
