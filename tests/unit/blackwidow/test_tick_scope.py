"""A tick that looks only at its scope (blackwidow.tick_scope) decides and writes exactly what a tick that looks
at every subscription does. Random sequences of admin writes, spawn events, silent nodes and failed sends run
through both, tick after tick, and every plan and every write must be equal; under rendezvous, and under modulo
paced band by band (blackwidow.rebalance), also with nodes that join, leave and restart."""
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from blackwidow import poll_pages, rebalance, reload, router, takeover, tick_scope
from blackwidow.decide import Polled, Rules, decide, liveness, settle
from blackwidow.quota.arithmetic import Params
from blackwidow.quota.leasing import LeaseRound, QuotaMemory
from blackwidow.quota.store import LeaseSnapshot
from blackwidow.sends import Outcome
from blackwidow.store.coordination import AssignmentView, NodeView, Snapshot, SubscriptionView, apply_settlement
from shared.wire import StatusReport, SubscriptionSpec, SubscriptionStatus

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
WIKI = "https://en.wikipedia.org/w/api.php"
NODES = ("A", "B", "C")
POOL = ("A", "B", "C", "D", "E")        # the nodes that may join under churn
RULES = Rules(node_failures=99, routing="modulo")       # a silent node stays live: the node set never changes
CHURN = Rules(node_failures=99, routing="rendezvous")   # nodes join, leave and restart by the test's events


def no_leases(now: datetime) -> LeaseRound:
    return LeaseRound(LeaseSnapshot({}, {}, frozenset()), {}, frozenset(), {}, {},
                      Params(ttl_s=15, margin_s=10, settle_s=60, horizon_s=6), now.timestamp())


class World:
    """The hub's snapshot and what each spawn runs, moved along by random events."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.made = 0
        self.snap = Snapshot({n: NodeView(n, f"http://{n}", "live", 0, "boot") for n in NODES}, {}, {})
        self.runs: dict[str, dict[str, SubscriptionStatus]] = {n: {} for n in NODES}
        self.sent: dict[str, dict[str, SubscriptionStatus]] = {n: {} for n in NODES}   # as last reported
        self.written: set[str] = set()
        self.whole: set[str] = set()            # nodes whose next report is whole (joined or restarted)

    @classmethod
    def seeded(cls, rng: random.Random, subscriptions: int, churn: bool) -> tuple["World", list]:
        """A world of `subscriptions`, and the events that move it along (node churn among them when asked)."""
        world = cls(rng)
        for _ in range(subscriptions):
            world.create()
        events = [world.create, world.patch, world.delete, world.spawn_event, world.spawn_event, world.spawn_event]
        if churn:
            events += [world.join, world.leave, world.restart]
        return world, events

    def live(self) -> list[str]:
        return sorted(n for n, view in self.snap.nodes.items() if view.state == "live")

    # -- the node set ---------------------------------------------------------------------------
    def join(self) -> None:
        out = [n for n in POOL if n not in self.live()]
        if out:
            node = self.rng.choice(out)
            self.snap.nodes[node] = NodeView(node, f"http://{node}", "live", 0, "boot")
            self.runs[node], self.sent[node] = {}, {}
            self.whole.add(node)

    def leave(self) -> None:
        """A node gone, as the tick that counted its last failed poll recorded it."""
        live = self.live()
        if len(live) > 1:
            node = self.rng.choice(live)
            self.snap.nodes[node] = NodeView(node, f"http://{node}", "dead", 99, "boot")
            self.runs[node], self.sent[node] = {}, {}

    def restart(self) -> None:
        node = self.rng.choice(self.live())
        self.runs[node] = {}
        self.whole.add(node)

    # -- the admin API -------------------------------------------------------------------------
    def create(self) -> None:
        self.made += 1
        sid = f"s{self.made:03d}"
        spec = SubscriptionSpec(id=sid, source_uuid=f"src-{self.rng.randint(1, 12)}", tenant_id="t", wiki=WIKI,
                                title=f"T{sid}")
        self.snap.subscriptions[sid] = SubscriptionView(sid, spec, True, "pending", None, 0, None, None)
        self.written.add(sid)

    def some(self) -> str | None:
        return self.rng.choice(sorted(self.snap.subscriptions)) if self.snap.subscriptions else None

    def patch(self) -> None:
        sid = self.some()
        if sid is None:
            return
        sub = self.snap.subscriptions[sid]
        if self.rng.random() < 0.5:
            sub = replace(sub, enabled=not sub.enabled, state="disabled" if sub.enabled else "pending")
        else:
            sub = replace(sub, spec=replace(sub.spec, quota=self.rng.choice([None, 5, 50])))
        self.snap.subscriptions[sid] = sub
        self.written.add(sid)

    def delete(self) -> None:
        sid = self.some()
        if sid is not None:
            del self.snap.subscriptions[sid]
            self.snap.assignments.pop(sid, None)
            self.written.add(sid)

    # -- the spawns ------------------------------------------------------------------------------
    def spawn_event(self) -> None:
        node = self.rng.choice(self.live())
        held = sorted(self.runs[node])
        if not held:
            return
        sid = self.rng.choice(held)
        st = self.runs[node][sid]
        event = self.rng.choice(["progress", "progress", "fail", "recover", "resolve", "lose"])
        if event == "progress":
            self.runs[node][sid] = replace(st, state="running", revisions=st.revisions + self.rng.randint(1, 30))
        elif event == "fail":
            self.runs[node][sid] = replace(st, state="failed", last_error="no such page")
        elif event == "recover":
            self.runs[node][sid] = replace(st, state="running", last_error=None)
        elif event == "resolve":
            self.runs[node][sid] = replace(st, page_key=f"src-{self.rng.randint(1, 12)}")
        else:
            del self.runs[node][sid]          # an orphan timer, say

    def polls(self, silent: set[str], skipped: frozenset[str] = frozenset()) -> Polled:
        """The answers of the live nodes but the `silent` (their polls fail) and the `skipped` (not polled)."""
        reports, statuses, changed = {}, {}, {}
        for node in self.live():
            if node in silent or node in skipped:
                continue
            now = dict(self.runs[node])
            before = self.sent[node]
            changed[node] = None if node in self.whole else \
                frozenset({sid for sid in now if before.get(sid) != now[sid]} | (before.keys() - now.keys()))
            self.whole.discard(node)
            self.sent[node] = now
            reports[node] = StatusReport(node_id=node, boot_id="boot", attached=True,
                                         subscriptions=tuple(now.values()))
            statuses[node] = now
        return Polled(reports, frozenset(silent), statuses, changed)

    def apply(self, outcomes: list[Outcome]) -> list[Outcome]:
        """The sends as the spawns take them; some fail."""
        done = []
        for o in outcomes:
            ok = self.rng.random() > 0.1
            if ok and isinstance(o.action, reload.Drop):
                self.runs[o.action.node_id].pop(o.action.subscription_id, None)
            elif ok and isinstance(o.action, reload.Put):
                spec = o.action.spec
                old = self.runs[o.action.node_id].get(spec.id)
                # now and then a spawn that does not say which spec it runs (an older version)
                self.runs[o.action.node_id][spec.id] = SubscriptionStatus(
                    id=spec.id, state="assigned", revisions=old.revisions if old else 0,
                    spec=spec.to_dict() if self.rng.random() > 0.1 else None)
            done.append(Outcome(o.action, ok, "assigned" if ok and isinstance(o.action, reload.Put) else None))
        return done


def planned(plan: reload.Plan) -> list[Outcome]:
    return [Outcome(a, True) for a in (*plan.drops, *plan.puts)]


class Hub:
    """What a scheduler keeps between ticks and how it finds a tick's scope, as blackwidow.poller does it."""

    def __init__(self, world: World, rules: Rules, per_tick: int):
        self.world, self.rules, self.per_tick = world, rules, per_tick
        self.carry: frozenset[str] | None = None
        self.routed_over: frozenset[str] | None = None
        self.paced: rebalance.Routing | None = None
        self.bands: rebalance.BandIndex | None = None
        self.pace: rebalance.Step | None = None
        self.banded: list[str] = []
        self.live: frozenset[str] = frozenset()
        self.memo = router.RendezvousMemo()

    def holdings(self) -> dict[str, set[str]]:
        snap = self.world.snap
        return Snapshot(snap.nodes, snap.subscriptions, snap.assignments).by_node

    def scope(self, polled: Polled, written: frozenset[str],
              taking: frozenset[str] = frozenset()) -> frozenset[str] | None:
        snap = self.world.snap
        self.live = live = liveness(snap, polled, self.rules)[1]
        holdings, statuses = self.holdings(), polled.by_node()
        # this tick's step of paced modulo routing and the bands it passes
        pace = self.pace = rebalance.tick(self.paced, live, self.per_tick, len(snap.subscriptions)) \
            if self.per_tick else None
        self.banded = []
        if pace is not None and pace.paced and pace.low < pace.high:
            if self.bands is None:
                self.bands = rebalance.BandIndex({sid: sub.route_key for sid, sub in snap.subscriptions.items()})
            self.banded = self.bands.between(pace.low, pace.high)
        moved = tick_scope.node_set_moves(routing=self.rules.routing, routed_over=self.routed_over, live=live,
                                          assignments=snap.assignments, subscriptions=snap.subscriptions,
                                          holdings=holdings, statuses=statuses,
                                          paced=pace is not None and pace.paced)
        reported = tick_scope.report_changes(takeover.whole(polled.changed, taking), statuses, holdings)
        return tick_scope.scope(self.carry, routed_over=self.routed_over, live=live, leased=frozenset(),
                                written=written, reported=reported, moved=moved, banded=self.banded)

    def decide(self, polled: Polled, now: datetime, scope: frozenset[str] | None = None):
        """A scoped decision is the scheduler's, with its rendezvous memo; a whole one, to compare with, weighs
        every winner afresh."""
        return decide(self.world.snap, polled, no_leases(now), self.rules, now,
                      previous_live=self.routed_over or self.live, memory=QuotaMemory(), scope=scope,
                      paced=self.pace.routing if self.pace is not None else None,
                      memo=self.memo if scope is not None else None)

    def settled(self, written: frozenset[str], settlement, scoped, polled: Polled, silent: set[str]) -> None:
        """The tick's writes applied, and what the next tick goes on from."""
        snap = self.world.snap
        apply_settlement(snap, settlement.assignments, settlement.deleted, settlement.subscriptions)
        if self.bands is not None:
            rekeyed = [sid for sid, values in settlement.subscriptions.items() if "page_key" in values]
            self.bands.add({sid: snap.subscriptions[sid].route_key for sid in (*rekeyed, *written)
                            if sid in snap.subscriptions})
        if self.pace is not None:
            self.paced = self.pace.routing
            if not self.paced.moving:
                self.bands = None
        silent_holdings = tick_scope.silent_holdings(silent, self.world.sent, self.holdings())
        self.carry = tick_scope.unsettled(plan=scoped.plan, desired=scoped.desired, states=scoped.state,
                                          assignments=snap.assignments, answered=polled.reports,
                                          silent_holdings=silent_holdings)
        self.routed_over = self.live


@pytest.mark.parametrize("rules, churn, per_tick", [(RULES, False, 0), (CHURN, True, 0), (RULES, True, 4)],
                         ids=["modulo", "rendezvous with churn", "paced modulo with churn"])
@pytest.mark.parametrize("seed", range(12))
def test_a_scoped_tick_plans_and_writes_what_a_whole_tick_does(seed, rules, churn, per_tick):
    rng = random.Random(seed)
    world, events = World.seeded(rng, 20, churn)
    hub = Hub(world, rules, per_tick)
    now = T0
    scoped_ticks = hard_ticks = band_ticks = 0
    for step in range(120):
        for _ in range(rng.randint(0, 3)):
            rng.choice(events)()
        silent = {n for n in world.live() if rng.random() < 0.1}
        polled = world.polls(silent)
        now += timedelta(seconds=rng.choice([2, 5, 40]))
        written, world.written = frozenset(world.written), set()
        scope = hub.scope(polled, written)
        whole, scoped = hub.decide(polled, now), hub.decide(polled, now, scope)
        assert scoped.plan == whole.plan, f"step {step}"
        outcomes = world.apply(planned(whole.plan))
        expected = settle(world.snap, whole, outcomes, now, rules)
        got = settle(world.snap, scoped, outcomes, now, rules)
        assert (got.assignments, sorted(got.deleted), got.subscriptions, got.reload) == \
            (expected.assignments, sorted(expected.deleted), expected.subscriptions, expected.reload), f"step {step}"
        band_ticks += scope is not None and bool(hub.banded)
        hard_ticks += scope is not None and hub.routed_over is not None and hub.live != hub.routed_over
        scoped_ticks += scope is not None
        hub.settled(written, expected, scoped, polled, silent)
        # the next polls name the same ids whether they look for copies elsewhere among the carried ids alone
        every = poll_pages.named(world.snap.assignments, world.sent, world.snap.subscriptions)
        few = poll_pages.named(world.snap.assignments, world.sent, world.snap.subscriptions,
                               by_node=hub.holdings(), candidates=hub.carry)
        assert {n: sorted(ids) for n, ids in few.items()} == {n: sorted(ids) for n, ids in every.items()}
    assert scoped_ticks > 100          # the comparison ran on scoped ticks, not on fallbacks to whole ones
    if churn:
        assert hard_ticks >= 5         # and on node-set changes looked at in part
    if per_tick:
        assert band_ticks >= 10        # and on ticks that moved bands


def _in_scope(plan: reload.Plan, scope: frozenset[str]) -> tuple:
    return (tuple(p for p in plan.puts if p.spec.id in scope),
            tuple(d for d in plan.drops if d.subscription_id in scope),
            tuple(a for a in plan.adopts if a.subscription_id in scope))


@pytest.mark.parametrize("rules, churn, per_tick", [(RULES, False, 0), (CHURN, True, 0), (RULES, True, 4)],
                         ids=["modulo", "rendezvous with churn", "paced modulo with churn"])
@pytest.mark.parametrize("seed", range(12))
def test_a_takeover_in_stages_acts_as_a_whole_tick_on_what_it_looks_at_and_leaves_nothing_unseen(
        seed, rules, churn, per_tick):
    """The scheduler restarts now and then and takes the nodes over a group a tick, as blackwidow.poller does
    (blackwidow.takeover): on the ids a takeover tick looks at it plans what a whole tick would, and once every
    node is taken, scoped ticks plan and write exactly what whole ticks do: nothing was left unseen."""
    step = 6
    rng = random.Random(1000 + seed)
    world, events = World.seeded(rng, 30, churn)
    hub = Hub(world, rules, per_tick)
    taking_over: takeover.Takeover | None = None
    now = T0
    takeovers = staged = compared = 0
    for tick in range(150):
        for _ in range(rng.randint(0, 3)):
            rng.choice(events)()
        if tick % 30 == 5:
            # the scheduler restarts: no carry, no node set routed over, no report kept, no band index; while
            # none led, the admin API, the spawns and the node set went on
            paced, hub = hub.paced, Hub(world, rules, per_tick)
            hub.paced = paced          # a new leader reads the routing layers from the database
            taking_over = None
            for _ in range(8):
                rng.choice(events)()
            world.whole.update(world.live())
        written, world.written = frozenset(world.written), set()
        live_before = frozenset(world.live())
        # as blackwidow.poller._take_over does it
        part = takeover.stage(taking_over, hub.carry, False, live_before, hub.holdings(), world.snap.assignments,
                              world.snap.subscriptions, step)
        taking_over, taking, skipped = part.takeover, part.taking, part.skipped
        if part.carry is not None:
            takeovers += 1
            hub.carry = part.carry
            hub.routed_over = hub.routed_over if hub.routed_over is not None else live_before
            written = frozenset()
        silent = {n for n in world.live() if n not in skipped and rng.random() < 0.1}
        polled = world.polls(silent, skipped)
        now += timedelta(seconds=rng.choice([2, 5, 40]))
        scope = hub.scope(polled, written, taking)
        whole, scoped = hub.decide(polled, now), hub.decide(polled, now, scope)
        staging = taking_over is not None
        if staging and scope is not None:
            # nodes not yet taken did not answer: what waits for them differs, what the tick looks at does not
            assert _in_scope(scoped.plan, scope) == _in_scope(whole.plan, scope), f"tick {tick}"
            assert all(p.node_id not in skipped for p in scoped.plan.puts)
            assert all(d.node_id not in skipped for d in scoped.plan.drops)
            staged += 1
            decision = scoped
        else:
            assert scoped.plan == whole.plan, f"tick {tick}"
            decision = whole
        outcomes = world.apply(planned(decision.plan))
        expected = settle(world.snap, decision, outcomes, now, rules)
        if not staging:
            got = settle(world.snap, scoped, outcomes, now, rules)
            assert (got.assignments, sorted(got.deleted), got.subscriptions, got.reload) == \
                (expected.assignments, sorted(expected.deleted), expected.subscriptions, expected.reload), \
                f"tick {tick}"
            compared += scope is not None
        hub.settled(written, expected, scoped, polled, silent)
        if taking_over is not None:
            taking_over = takeover.after(taking_over, taking, hub.live)
    assert takeovers >= 2 and staged >= 6      # takeovers in stages happened, over several ticks each
    assert compared > 80                       # and scoped ticks after them were compared with whole ones


def test_whatever_cannot_be_proven_unchanged_is_a_whole_tick():
    live = frozenset({"A", "B"})
    base = dict(carry=frozenset({"x"}), routed_over=live, live=live, leased=frozenset(), written=frozenset({"y"}),
                reported={"A": frozenset({"z"}), "B": frozenset()})
    assert tick_scope.scope(**base) == {"x", "y", "z"}
    for name, change in [("first tick", {"carry": None}), ("snapshot read whole", {"written": None}),
                         ("node set changed, its moves unknown", {"live": frozenset({"A"})}),
                         ("a whole report", {"reported": {"A": None, "B": frozenset()}}),
                         ("a tenant with a quota", {"leased": frozenset({"t"})})]:
        assert tick_scope.scope(**{**base, **change}) is None, name


def test_a_node_set_change_adds_what_it_may_move():
    live = frozenset({"A", "B"})
    base = dict(carry=frozenset({"x"}), routed_over=live, live=frozenset({"A", "B", "C"}), leased=frozenset(),
                written=frozenset({"y"}), reported={"A": frozenset({"z"})})
    assert tick_scope.scope(**base, moved=frozenset({"m"})) == {"x", "y", "z", "m"}
    assert tick_scope.scope(**base, moved=None) is None


def test_a_whole_report_adds_every_id_it_names_and_every_id_assigned_to_its_node():
    statuses = {"A": {"a1": "status", "b9": "status"}, "B": {"b1": "status"}, "C": {}}
    holdings = {"A": {"a1", "a2"}, "B": {"b1"}, "C": {"c1"}}
    assert tick_scope.report_changes({"A": None, "B": frozenset({"b1"})}, statuses, holdings) == \
        {"A": {"a1", "a2", "b9"}, "B": {"b1"}, "C": {"c1"}}      # C: absent, as good as whole


def test_silent_nodes_hold_what_they_last_reported_and_what_is_assigned_to_them():
    assert tick_scope.silent_holdings({"A"}, {"A": {"r"}, "B": {"q"}}, {"A": {"s"}, "B": {"t"}}) == {"r", "s"}


def _view(sid: str, source: str) -> SubscriptionView:
    spec = SubscriptionSpec(id=sid, source_uuid=source, tenant_id="t", wiki=WIKI, title=sid)
    return SubscriptionView(sid, spec, True, "running", None, 0, None, None)


@pytest.mark.parametrize("name, before, after, expect", [
    ("a node joins: only what it outweighs its holder for", "ABC", "ABCD", "won by D"),
    ("a node leaves: what it held", "ABCD", "ABC", "held by D"),
    ("one leaves and one joins", "ABCD", "ABCE", "held by D, won by E"),
])
def test_under_rendezvous_a_node_set_change_moves_what_rendezvous_moves(name, before, after, expect):
    from blackwidow import router
    subs = {f"s{i}": _view(f"s{i}", f"src-{i}") for i in range(400)}
    first = {sid: router.node_for(sub.route_key, sorted(before), router.RENDEZVOUS) for sid, sub in subs.items()}
    assignments = {sid: AssignmentView(node, True, T0) for sid, node in first.items()}
    holdings: dict[str, set[str]] = {}
    for sid, node in first.items():
        holdings.setdefault(node, set()).add(sid)
    moved = tick_scope.node_set_moves(routing="rendezvous", routed_over=frozenset(before), live=frozenset(after),
                                      assignments=assignments, subscriptions=subs, holdings=holdings, statuses={})
    routed = {sid: router.node_for(sub.route_key, sorted(after), router.RENDEZVOUS) for sid, sub in subs.items()}
    assert moved == {sid for sid in subs if routed[sid] != first[sid]}, name
    assert 0 < len(moved) < 200


def test_under_modulo_or_without_a_last_node_set_a_node_set_change_moves_everything():
    args = dict(assignments={}, subscriptions={}, holdings={}, statuses={})
    assert tick_scope.node_set_moves(routing="modulo", routed_over=frozenset("AB"), live=frozenset("ABC"),
                                     **args) is None
    assert tick_scope.node_set_moves(routing="rendezvous", routed_over=None, live=frozenset("ABC"), **args) is None


def test_a_node_set_change_re_sends_what_a_node_reported_without_its_spec():
    status = SubscriptionStatus(id="s1", state="running", revisions=0, spec=None)
    moved = tick_scope.node_set_moves(routing="rendezvous", routed_over=frozenset("AB"), live=frozenset("A"),
                                      assignments={}, subscriptions={}, holdings={},
                                      statuses={"A": {"s1": status}})
    assert moved == {"s1"}
