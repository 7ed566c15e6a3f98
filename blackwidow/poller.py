"""The poll tick's I/O shell: read a snapshot, write the quota grants ahead, poll every live node, send what
blackwidow.decide planned, write what it settled. The rules live in blackwidow.decide (pure); this module
only moves data between the database, the spawns and those functions.

poll_once is a plain function (tests call it directly; scheduler.py only schedules it). Every node is
handled in isolation: one that times out or answers nonsense never stops the tick for the others.
No transaction is held across HTTP calls, and every write transaction first checks the leader's fencing
epoch (blackwidow.fencing): a deposed leader raises LeadershipLost and writes nothing, and sends nothing
once it knows.
"""
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Callable, Mapping

from blackwidow import (dump_tick, feed_plan, feed_tick, fencing, poll_pages, rebalance, reload, router, sends,
                        takeover, tick_scope)
from blackwidow.decide import Decision, Polled, Rules, Settlement, decide, liveness, settle
from blackwidow.store import changes, feeds as feeds_store, identities, scheduler_state
from blackwidow.upstream import clock_check, rounds as upstream_rounds, tick as upstream_tick
from blackwidow.upstream.allocate import Plan
from blackwidow.upstream.slots import held_seconds
from blackwidow.leadership import holder_id
from blackwidow.metrics import SchedulerMetrics
from blackwidow.quota import leasing, store as quota_store
from blackwidow.spawn_client import SpawnBadResponse, SpawnClient, SpawnError, SpawnRejected
from blackwidow.store import coordination as store
from blackwidow.store.coordination import AssignmentView, Snapshot
from blackwidow.tick_gc import without_cyclic_gc
from shared.config import HubConfig
from shared.wire import Budget, IdentityUse, Lease, Poll, StatusReport, SubscriptionStatus

logger = logging.getLogger(__name__)

MAX_WORKERS = 32


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class PollerState:
    """What a scheduler process remembers between ticks: its fencing epoch, the node set it last routed over
    (only to label reloads hard or soft) and quota consumption rates. A fresh process starts empty and claims
    a new epoch at its first tick; the database holds the rest."""
    routed_nodes: frozenset[str] | None = None
    quota: leasing.QuotaMemory = field(default_factory=leasing.QuotaMemory)
    fence: fencing.Fence | None = None
    # {node id: its latest StatusReport.identities}: the upstream demand the next budgets serve
    uses: dict[str, Mapping[str, IdentityUse]] = field(default_factory=dict)
    # {node id: {identity id: the Budget it was last sent}}: what a budget round compares its plan with
    sent: dict[str, dict[str, Budget]] = field(default_factory=dict)
    # {node id: its last report received whole}: the next poll asks only for what changed since
    reports: dict[str, "Known"] = field(default_factory=dict)
    # the snapshot as of change number `seq` (blackwidow.store.changes), read again only where it changed
    cache: "Cached | None" = None
    # the change feeds followed and what routing their changes needs (blackwidow.feed_tick)
    feed: feed_tick.FeedMemory = field(default_factory=feed_tick.FeedMemory)
    page_keys: int = 0              # ticks that wrote a page key
    # what the last tick left unsettled (blackwidow.tick_scope); None: the next tick looks at everything
    carry: frozenset[str] | None = None
    # {node id: its clock against the hub's, from its last answered poll that said} (upstream.clock_check)
    clocks: dict[str, clock_check.ClockReading] = field(default_factory=dict)
    clock_off: frozenset[str] = frozenset()      # the nodes left out of upstream budgets for their clocks
    # modulo routing as the last tick left it (blackwidow.rebalance), read from the database by a new leader;
    # while a node-set change moves band by band, the route keys in band order
    paced: rebalance.Routing | None = None
    bands: rebalance.BandIndex | None = None
    cost: rebalance.Cost = field(default_factory=rebalance.Cost)     # what ticks take, to size paced steps
    # the nodes this scheduler has not yet taken over (blackwidow.takeover); None: none or no takeover
    taking_over: takeover.Takeover | None = None
    # each source's rendezvous winner over the nodes routed last (router.RendezvousMemo): this scheduler's own,
    # emptied when it reads its snapshot whole (its route keys are the old snapshot's strings: kept beside the
    # new ones they would cost a second copy of each, about 100 MB at a million)
    rendezvous: router.RendezvousMemo = field(default_factory=router.RendezvousMemo)


@dataclass(frozen=True)
class Cached:
    snapshot: Snapshot
    seq: int


@dataclass(frozen=True)
class Known:
    token: str
    statuses: Mapping[str, SubscriptionStatus]


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
    # wall seconds per stage (load, grants, polls, decide, sends, record): where a long tick went
    stages: Mapping[str, float] = field(default_factory=dict)
    reasons: Mapping[str, int] = field(default_factory=dict)     # puts and drops by reason (reload.Plan)
    looked_at: int | None = None     # subscriptions a scoped tick looked at (None: every one; tick_scope)
    nudged: frozenset[str] = frozenset()     # nodes that took change-feed nudges this tick
    pending: int = 0                 # live nodes still to take over after this tick (blackwidow.takeover)


def budget_nodes(state: PollerState, live: frozenset[str], config: HubConfig) -> frozenset[str]:
    """The live nodes upstream budgets may give new slot holds, and change feeds readers: those whose clocks
    are not certainly off (blackwidow.upstream.clock_check). Logs each node leaving that set and coming back."""
    trusted = clock_check.trusted(live, state.clocks, config.max_clock_skew_s)
    off = live - trusted
    consensus = clock_check.reference(state.clocks[n].offset_s for n in live if n in state.clocks)
    for nid in sorted(off - state.clock_off):
        c = state.clocks[nid]
        logger.warning("node.clock_off", extra={"node": nid, "offset_s": round(c.offset_s, 3),
                                                "error_s": round(c.error_s, 3), "consensus_s": round(consensus, 3),
                                                "bound_s": config.max_clock_skew_s})
    for nid in sorted(state.clock_off & trusted):
        logger.info("node.clock_ok", extra={"node": nid})
    state.clock_off = off
    return trusted


@without_cyclic_gc
def poll_once(sessionmaker, spawn_client: SpawnClient, config: HubConfig,
              now: Callable[[], datetime] = utcnow, *, state: PollerState | None = None,
              metrics: SchedulerMetrics | None = None) -> TickResult:
    """One tick. Idempotent: run it again and nodes that already run the right specs get nothing.
    Raises fencing.LeadershipLost when another scheduler took over; other database errors propagate
    (the scheduler logs them and tries again next tick)."""
    started = time.monotonic()
    metrics = metrics or SchedulerMetrics()
    state = state if state is not None else PollerState()
    at = now()
    stages = _Stages()
    with sessionmaker.begin() as session:
        if state.fence is None:
            state.fence = fencing.claim(session, holder_id(), at)
            state.cache = None            # an earlier leader may have written anything
            state.carry = None
            state.taking_over = None
            state.feed.feeds = None
            state.paced, state.bands = scheduler_state.routing(session), None
            logger.info("scheduler.epoch", extra={"epoch": state.fence.epoch})
        else:
            fencing.check(session, state.fence)
        before = quota_store.load(session)
        if state.cache is None:
            state.rendezvous.clear()
        state.cache, written = _snapshot(session, state.cache)
        snap = leasing.mark_leased(state.cache.snapshot, leasing.leased_tenants(before))
        upstream = identities.load(session, reported={i for uses in state.uses.values() for i in uses})
        if state.feed.feeds is None:
            state.feed.feeds = feeds_store.load(session)
        dumps_loaded = dump_tick.load(session)
    before_feeds = dict(state.feed.feeds)       # as the tick began: it writes the feeds that changed
    live = sorted((n for n in snap.nodes.values() if n.state == store.LIVE), key=lambda n: n.id)
    live_ids = frozenset(n.id for n in live)
    taking, skipped, written = _take_over(state, snap, live_ids, leasing.leased_tenants(before), written, config)
    stages.end("load")
    leases = leasing.plan_grants(before, snap, live_ids, leasing.params_for(config), at.timestamp(), state.quota)
    trusted = budget_nodes(state, live_ids, config)
    budgets = upstream_tick.plan_budgets(upstream, state.uses, trusted, at.timestamp(), upstream_tick.params(config))
    if leases.any or budgets:
        # written before the polls carry them: a crash or a new leader must not forget a grant or a slot hold
        with sessionmaker.begin() as session:
            fencing.check(session, state.fence)
            if leases.any:
                quota_store.write_grants(session, leases, at)
            identities.save(session, upstream, budgets)
    stages.end("grants")

    paging = poll_pages.Paging(config.poll_page_ids, config.report_page_items)
    state.reports = {nid: known for nid, known in state.reports.items() if nid in live_ids}
    held: dict[str | None, dict[str, float]] = {
        identity: held_seconds(s.holds, at.timestamp() - feed_plan.READER_LOOKBACK_S, at.timestamp())
        for identity, s in upstream.identities.items()}
    # a reader on a node left out of the budgets for its clock would never read: readers go to the others
    feeds = feed_tick.plan_round(state.feed, snap, state.cache.seq, state.uses, trusted, config, at, held)
    dumps = dump_tick.plan(dumps_loaded, live_ids, at, config)
    polled = _poll_nodes(spawn_client, [n for n in live if n.id not in skipped], snap, metrics, leases, budgets,
                         paging, state.reports, feeds, candidates=state.carry, dumps=dumps.parts)
    stages.end("polls")
    dumped = dump_tick.read(dumps, polled.reports, at, Rules.of(config))
    # the changes the readers reported go to their nodes now, not a poll later
    read = feed_tick.read_reports(state.feed, feeds, polled, snap, live_ids, at, metrics, _routes_version(state))
    state.feed.feeds, pushed = feed_tick.push_nudges(spawn_client, read, polled, snap, live_ids)
    stages.end("feeds")
    # a node that answered without a reading (a spawn that does not say its clock) has none any more
    state.clocks = {nid: c for nid, c in state.clocks.items() if nid in live_ids and nid not in polled.reports} | \
        dict(polled.clocks)
    state.uses = {nid: r.identities for nid, r in polled.reports.items()} | \
        {nid: use for nid, use in state.uses.items() if nid in polled.failed or nid in skipped}
    state.sent = {nid: held for nid, held in state.sent.items() if nid in live_ids}
    for nid in polled.reports:
        state.sent[nid] = upstream_rounds.delivered(state.sent.get(nid, {}), upstream_tick.budgets_for(budgets, nid))
    rules = Rules.of(config)
    after_polls = liveness(snap, polled, rules)[1]
    pace = _pace(state, snap, after_polls, rules, config)
    scope = _scope(state, snap, polled, after_polls, leasing.leased_tenants(before), written, pace, rules, taking)
    decision = decide(snap, polled, leases, rules, at,
                      previous_live=state.routed_nodes if state.routed_nodes is not None else live_ids,
                      memory=state.quota, scope=scope, paced=pace.routing if pace is not None else None,
                      memo=state.rendezvous)
    _log_decision(snap, decision)
    stages.end("decide")
    with sessionmaker.begin() as session:
        fencing.check(session, state.fence)          # a deposed leader sends nothing
    outcomes = _execute(spawn_client, decision.plan, snap, metrics)
    stages.end("sends")
    settlement = settle(snap, decision, outcomes, at, rules)
    state.feed.feeds = feed_tick.settled(state.feed.feeds, pushed, decision.live, at, metrics)
    feed_tick.freeze_watermarks(settlement.subscriptions, snap, before_feeds)
    try:
        with sessionmaker.begin() as session:
            fencing.check(session, state.fence, ticked_at=now())
            wrote = _record(session, snap, at, leases, polled, decision, settlement, config.max_clock_skew_s)
            # a report that changed nothing else is written once per report interval, so the row is at most an
            # interval and a tick behind: a scheduler that takes over within an interval still finds it followed
            feeds_store.save(session, state.feed.feeds, before_feeds, every_s=feed_tick.report_interval_s(config))
            dump_tick.save(session, dumps, dumped)
            if pace is not None and pace.routing != state.paced:
                scheduler_state.save_routing(session, pace.routing)
            changes.prune(session, state.cache.seq)
        store.apply_settlement(state.cache.snapshot, *wrote)
        rekeyed = [sid for sid, values in wrote[2].items() if "page_key" in values]
        if rekeyed:
            state.page_keys += 1
        if state.bands is not None:
            # ids keyed since the index was built: the bands still to come must find them under their key
            subs = state.cache.snapshot.subscriptions
            state.bands.add({sid: subs[sid].route_key for sid in (*rekeyed, *(written or ())) if sid in subs})
        silent = tick_scope.silent_holdings(polled.failed, {n: k.statuses for n, k in state.reports.items()},
                                            state.cache.snapshot.by_node)
        state.carry = tick_scope.unsettled(plan=decision.plan, desired=decision.desired, states=decision.state,
                                           assignments=state.cache.snapshot.assignments, answered=polled.reports,
                                           silent_holdings=silent)
    except fencing.LeadershipLost:
        state.cache = None
        state.carry = None
        state.taking_over = None
        state.feed.feeds = None
        raise
    except Exception:
        # sends already happened; the next tick adopts what the nodes report
        state.cache = None
        state.carry = None
        state.taking_over = None
        state.feed.feeds = None
        metrics.tick_errors.inc()
        logger.exception("tick.record_failed")
    stages.end("record")
    if state.taking_over is not None:
        state.taking_over = takeover.after(state.taking_over, taking, decision.live)
        if state.taking_over is None:
            logger.info("scheduler.taken_over", extra={"nodes": len(decision.live)})
    state.routed_nodes = decision.live
    if pace is not None:
        # what was sent routes so, written or not: a whole next tick must not move a band back
        state.paced = pace.routing
        if not pace.routing.moving:
            state.bands = None

    plan = decision.plan
    puts = [o for o in outcomes if isinstance(o.action, reload.Put)]
    drops = [o for o in outcomes if isinstance(o.action, reload.Drop)]
    if plan.kind:
        metrics.reloads.labels(plan.kind).inc()
    metrics.adoptions.inc(len(plan.adopts))
    metrics.nodes_removed.inc(len(decision.nodes.dead))
    metrics.live_nodes.set(len(decision.live))
    result = TickResult(polled=len(live) - len(skipped), failed=tuple(sorted(polled.failed)),
                        removed=decision.nodes.dead,
                        live=tuple(sorted(decision.live)), kind=plan.kind,
                        sent=sum(o.ok for o in puts), send_failures=sum(not o.ok for o in puts),
                        dropped=sum(o.ok for o in drops), drop_failures=sum(not o.ok for o in drops),
                        adopted=len(plan.adopts), seconds=time.monotonic() - started, stages=stages.seconds,
                        reasons=plan.reasons, looked_at=len(scope) if scope is not None else None,
                        nudged=frozenset(n for nodes in pushed.values() for n in nodes),
                        pending=len(state.taking_over.pending) if state.taking_over is not None else 0)
    # a takeover's ticks read the snapshot or whole reports: they measure neither what a steady tick costs nor
    # what a move adds to one
    state.cost = rebalance.measure(state.cost, result.seconds, len(outcomes),
                                   whole=scope is None or bool(taking) or bool(skipped),
                                   polls_s=stages.seconds.get("polls", 0.0))
    if pace is not None:
        metrics.move_done.set(pace.routing.layers[0].frontier / rebalance.SPACE)
        metrics.move_step.set(rebalance.per_tick(state.cost, config.move_tick_s, config.moves_per_tick))
    metrics.takeover_pending.set(result.pending)
    metrics.tick_seconds.observe(result.seconds)
    metrics.ticks.labels("whole" if scope is None else "scoped").inc()
    metrics.tick_looked_at.set(len(snap.subscriptions) if scope is None else len(scope))
    logger.debug("tick.done", extra=vars(result))
    return result


class _Stages:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def end(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = now - self._last
        self._last = now


def _log_decision(snap: Snapshot, decision: Decision) -> None:
    for node_id in decision.nodes.dead:
        logger.warning("node.removed", extra={"node": node_id, "url": snap.nodes[node_id].url,
                                              "failures": decision.nodes.failures[node_id]})
    for node_id, items in decision.rejected.items():
        logger.warning("node.report_items_rejected", extra={"node": node_id, "count": len(items),
                                                            "first": items[0]})
    plan = decision.plan
    if plan.kind:
        logger.info("reload.planned", extra={"kind": plan.kind, "puts": len(plan.puts), "drops": len(plan.drops),
                                             "adopts": len(plan.adopts), "reasons": plan.reasons})


def _pace(state: PollerState, snap: Snapshot, live: frozenset[str], rules: Rules,
          config: HubConfig) -> rebalance.Step | None:
    """This tick's step of paced modulo routing (blackwidow.rebalance); None under rendezvous."""
    if rules.routing != router.MODULO:
        return None
    size = rebalance.per_tick(state.cost, config.move_tick_s, config.moves_per_tick)
    return rebalance.tick(state.paced, live, size, len(snap.subscriptions))


def _take_over(state: PollerState, snap: Snapshot, live: frozenset[str], leased: frozenset[str],
               written: frozenset[str] | None,
               config: HubConfig) -> tuple[frozenset[str], frozenset[str], frozenset[str] | None]:
    """This tick's part of a takeover in stages (blackwidow.takeover): the nodes it takes over, the nodes it
    does not poll, and the ids the admin API changed (none when a takeover starts: it looks at every id)."""
    staged = takeover.stage(state.taking_over, state.carry, bool(leased), live, snap.by_node, snap.assignments,
                            snap.subscriptions, config.takeover_ids)
    state.taking_over = staged.takeover
    if staged.carry is not None:
        state.carry = staged.carry
        state.routed_nodes = state.routed_nodes if state.routed_nodes is not None else live
        logger.info("scheduler.taking_over", extra={"nodes": len(live), "step": config.takeover_ids})
        return staged.taking, staged.skipped, frozenset()
    return staged.taking, staged.skipped, written


def _scope(state: PollerState, snap: Snapshot, polled: Polled, live: frozenset[str], leased: frozenset[str],
           written: frozenset[str] | None, pace: rebalance.Step | None, rules: Rules,
           taking: frozenset[str] = frozenset()) -> frozenset[str] | None:
    """The ids this tick looks at (blackwidow.tick_scope), None: every one. `live`: the live nodes after this
    tick's polls (decide.liveness); `taking`: the nodes a takeover takes this tick (their reports count whole)."""
    if state.carry is None or written is None or leased:
        return None               # a whole tick whatever else: spare the passes below
    statuses = polled.by_node()
    moved = None
    if live != state.routed_nodes:
        moved = tick_scope.node_set_moves(routing=rules.routing, routed_over=state.routed_nodes, live=live,
                                          assignments=snap.assignments, subscriptions=snap.subscriptions,
                                          holdings=snap.by_node, statuses=statuses,
                                          paced=pace is not None and pace.paced)
        if moved is None:
            return None
    banded: list[str] = []
    if pace is not None and pace.paced and pace.low < pace.high:
        if state.bands is None:
            state.bands = rebalance.BandIndex({sid: sub.route_key for sid, sub in snap.subscriptions.items()})
        banded = state.bands.between(pace.low, pace.high)
    reported = tick_scope.report_changes(takeover.whole(polled.changed, taking), statuses, snap.by_node)
    return tick_scope.scope(state.carry, routed_over=state.routed_nodes, live=live, leased=leased,
                            written=written, reported=reported, moved=moved, banded=banded)


def _snapshot(session, cached: Cached | None) -> tuple[Cached, frozenset[str] | None]:
    """Every row on a scheduler's first tick; after that the cached snapshot with the rows the admin API
    changed since read again. The head is read first: a change committed during the reads is read again
    next tick, never missed. Also the ids read again (None: every row was)."""
    seq = changes.head(session)
    if cached is None:
        return Cached(store.load_snapshot(session), seq), None
    ids = frozenset(changes.since(session, cached.seq, seq))
    return Cached(store.refresh_snapshot(session, cached.snapshot, ids), seq), ids


def _record(session, snap: Snapshot, at: datetime, leases: leasing.LeaseRound, polled: Polled,
            decision: Decision, settlement: Settlement,
            skew_s: float) -> tuple[dict[str, AssignmentView], tuple[str, ...], dict[str, dict]]:
    """Write the tick's outcome; returns what it wrote (assignments, deleted assignments, subscription
    changes), for the cached snapshot."""
    nodes = decision.nodes
    store.record_node_polls(session, at, ok=nodes.ok, failed=nodes.failures, dead=nodes.dead, clocks=polled.clocks)
    for node_id, report in sorted(polled.reports.items()):
        if report.identities:       # pauses (429, maxlag) and refused credentials, for every node's next budget
            identities.record_use(session, node_id, report.identities, now=at.timestamp(), skew_s=skew_s)
    if leases.any:
        quota_store.write_learnt(session, leases, decision.learnt)
    present = store.lock_existing_subscriptions(session, set(settlement.assignments) | set(settlement.subscriptions))
    assignments = {sid: a for sid, a in settlement.assignments.items() if sid in present}
    subscriptions = {sid: c for sid, c in settlement.subscriptions.items() if sid in present}
    store.save_assignments(session, assignments, settlement.deleted)
    store.update_subscriptions(session, subscriptions, snap.subscriptions)
    if settlement.reload is not None:
        kind, reason, puts, drops = settlement.reload
        store.record_reload(session, kind, reason, sends=puts, drops=drops, at=at)
    return assignments, settlement.deleted, subscriptions


def _routes_version(state: PollerState) -> tuple | None:
    """The version of the snapshot the feed's route index (feed_tick.routes) is kept for: the cached snapshot,
    not the tick's, which with leased tenants is a marked copy of it; its change number; the page keys written."""
    cached = state.cache
    return (id(cached.snapshot), cached.seq, state.page_keys) if cached is not None else None


def _each(fn, items: list) -> list:
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(items)), thread_name_prefix="bw-poll") as pool:
        return list(pool.map(fn, items))


def _poll_nodes(client: SpawnClient, live: list[store.NodeView], snap: Snapshot, metrics: SchedulerMetrics,
                leases: leasing.LeaseRound, budgets: Mapping[str, Plan], paging: poll_pages.Paging,
                known: dict[str, Known], feeds: feed_tick.FeedRound = feed_tick.FeedRound(),
                candidates: frozenset[str] | None = None,
                dumps: Mapping[str, poll_pages.DumpPart] | None = None) -> Polled:
    """Poll concurrently: the answers, and the nodes whose poll failed. `known` holds each node's last
    whole report and is updated with this tick's. `candidates`: the only ids that can sit on a node other
    than their own (blackwidow.tick_scope), None: unknown."""
    assigned = poll_pages.named(snap.assignments, {nid: k.statuses for nid, k in known.items()},
                                snap.subscriptions, by_node=snap.by_node, candidates=candidates)

    def poll(node: store.NodeView):
        began = time.monotonic()
        try:
            got = _poll_node(client, node, assigned.get(node.id, []), leases.for_node(node.id),
                             upstream_tick.budgets_for(budgets, node.id), paging, known.get(node.id),
                             snap.subscriptions, feeds.for_node(node.id),
                             (dumps or {}).get(node.id, poll_pages.DumpPart()))
            if got.report.node_id is not None and got.report.node_id != node.id:
                raise SpawnError(f"answered as node {got.report.node_id}", node_url=node.url)
            if got.report.token is not None:      # one thread per node: no two write the same key
                known[node.id] = Known(got.report.token, got.statuses)
            else:
                known.pop(node.id, None)
            return node, got
        except SpawnError as exc:
            return node, exc
        except Exception as exc:       # a bug must cost one node's poll, not the tick
            logger.exception("node.poll_error", extra={"node": node.id})
            return node, exc
        finally:
            metrics.poll_seconds.observe(time.monotonic() - began)

    reports: dict[str, StatusReport] = {}
    statuses: dict[str, Mapping[str, SubscriptionStatus]] = {}
    changed: dict[str, frozenset[str] | None] = {}
    clocks: dict[str, clock_check.ClockReading] = {}
    failed: set[str] = set()
    for node, outcome in _each(poll, live):
        if isinstance(outcome, poll_pages.Merged):
            metrics.polls.labels("ok").inc()
            reports[node.id], statuses[node.id], changed[node.id] = outcome.report, outcome.statuses, outcome.changed
            if outcome.clock is not None:
                clocks[node.id] = outcome.clock
            if node.boot_id is not None and outcome.report.boot_id != node.boot_id:
                logger.info("node.restarted", extra={"node": node.id, "url": node.url})
        else:
            metrics.polls.labels("failed").inc()
            failed.add(node.id)
            logger.warning("node.poll_failed", extra={"node": node.id, "url": node.url, "error": str(outcome),
                                                      "failures": node.consecutive_failures + 1})
    return Polled(reports, frozenset(failed), statuses, changed, clocks)


def _poll_node(client: SpawnClient, node: store.NodeView, ids: list[str], leases: Mapping[str, Lease],
               budgets: Mapping[str, Budget], paging: poll_pages.Paging, known: Known | None,
               specs: Mapping[str, store.SubscriptionView],
               feeds: poll_pages.FeedPart = poll_pages.FeedPart(),
               dumps: poll_pages.DumpPart = poll_pages.DumpPart()) -> poll_pages.Merged:
    """One node's poll in bounded requests (blackwidow.poll_pages). A spawn that refuses a paged list (422:
    a version without pages, in a rolling upgrade) gets the whole list in one request, as it always did."""
    pages = poll_pages.split(ids, paging.page_ids)
    round_id = uuid.uuid4().hex
    answers: list[StatusReport] = []
    readings: list[clock_check.ClockReading | None] = []
    after: str | None = None
    index = 0

    def timed(poll: Poll) -> StatusReport:
        sent = time.time()
        answer = client.poll(node.url, poll)
        readings.append(None if answer.clock is None else clock_check.reading(sent, time.time(), answer.clock))
        return answer

    while True:
        poll = poll_pages.request(node.id, pages, index, round_id, leases, budgets, after, paging,
                                  known.token if known is not None else None, feeds, dumps)
        try:
            answer = timed(poll)
        except SpawnRejected as exc:
            if exc.status != 422 or index or poll.page is None:
                raise
            whole = timed(Poll(node_id=node.id, assigned=tuple(sorted(ids)), leases=leases, budgets=budgets,
                               feeds=feeds.duties, changes=feeds.changes, followed=feeds.followed,
                               dumps=dumps.files, catch_up=dumps.catch_up, members=dumps.members,
                               census=dumps.census))
            return poll_pages.Merged(whole, {s.id: s for s in whole.subscriptions}, None,
                                     clock_check.narrowest(readings))
        answers.append(poll_pages.sharing_snapshot(answer, specs))
        try:
            if not poll_pages.more(index, len(pages), answer, after):
                merged = poll_pages.merged(answers, known.statuses if known is not None else None)
                return replace(merged, clock=clock_check.narrowest(readings))
        except poll_pages.PagingError as exc:
            raise SpawnBadResponse(f"status report: {exc}", node_url=node.url) from None
        after = poll_pages.cursor(after, answer)
        index += 1


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
