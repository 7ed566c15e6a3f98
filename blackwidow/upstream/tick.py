"""What the scheduler's tick calls for upstream budgets. Pure: no I/O, no clock.

Per tick (docs/upstream.md):
  1. in the write-ahead transaction, before the polls: `snapshot = store.identities.load(session, reported)`
     (the identity ids in `last_uses`),,
     `plans = plan_budgets(snapshot, last_uses, live_nodes, now, params(config))`,
     `store.identities.save(session, snapshot, plans)`; commit;
  2. each node's Poll carries `budgets_for(plans, node_id)` as `Poll.budgets`;
  3. after the polls, for each answer: `store.identities.record_use(session, node_id, report.identities,
     now=now, skew_s=config.max_clock_skew_s)`, and keep `report.identities` as that node's `last_uses`.
"""
from dataclasses import replace
from typing import Iterable, Mapping

from blackwidow.store.identities import UpstreamSnapshot
from blackwidow.upstream.allocate import Demand, Params, Plan, allocate
from shared.config import HubConfig
from shared.hashing import stable_hash
from shared.wire import Budget, IdentityUse


def params(config: HubConfig) -> Params:
    """A hold is planned two polls before the current one ends, so it reaches its node at least one poll
    before it starts; a hold is never shorter than that horizon plus the handover gap."""
    horizon = 2 * config.poll_interval_s
    handover = 2 * config.max_clock_skew_s
    window = max(config.budget_window_s, horizon + handover)
    return Params(window_s=window, handover_s=handover, horizon_s=horizon, cycle_s=config.budget_cycle_s,
                  pause_jitter_s=config.budget_pause_jitter_s, keep_s=window, backfill_turn_s=config.poll_interval_s)


def demand_of(uses: Mapping[str, Mapping[str, IdentityUse]], live_nodes: Iterable[str]) -> dict[str, dict]:
    """{identity id: {node id: Demand}} from each live node's latest IdentityUse map."""
    out: dict[str, dict[str, Demand]] = {}
    for node in live_nodes:
        for identity_id, use in uses.get(node, {}).items():
            out.setdefault(identity_id, {})[node] = Demand(fresh=dict(use.fresh), backfill=dict(use.backfill),
                                                           released_gen=use.released_gen, served=dict(use.served),
                                                           following=use.following)
    return out


def plan_budgets(snapshot: UpstreamSnapshot, uses: Mapping[str, Mapping[str, IdentityUse]],
                 live_nodes: Iterable[str], now: float, p: Params) -> dict[str, Plan]:
    """One Plan per identity that has holds or demand (the others need neither a write nor a budget).
    `uses`: node id -> the `StatusReport.identities` of its latest answer."""
    live = list(live_nodes)
    demand = demand_of(uses, live)
    plans = {}
    for identity_id, state in snapshot.identities.items():
        wanted = demand.get(identity_id, {})
        if wanted or state.holds:
            plan = allocate(state, wanted, snapshot.weights, now, p)
            turn = login_turn({n: uses[n][identity_id] for n in live if identity_id in uses.get(n, {})})
            if state.limits.credential is not None and turn in plan.budgets:
                plan = replace(plan, budgets={**plan.budgets, turn: replace(plan.budgets[turn], login=True)})
            plans[identity_id] = plan
    return plans


def login_turn(uses: Mapping[str, IdentityUse]) -> str | None:
    """The one node that may log in with the identity's credential now, among those waiting to. A login's
    first request carries no session, so the wiki's edge meters it as the anonymous client (one request in
    flight): nodes take turns. The choice is stable, so a node keeps its turn until it reports a session."""
    waiting = [node for node, use in uses.items() if use.needs_login]
    return min(waiting, key=lambda node: (stable_hash(node), node)) if waiting else None


def budgets_for(plans: Mapping[str, Plan], node: str) -> dict[str, Budget]:
    """`Poll.budgets` of one node: {identity id: Budget}; empty when it has nothing to do upstream."""
    return {identity_id: plan.budgets[node] for identity_id, plan in plans.items() if node in plan.budgets}
