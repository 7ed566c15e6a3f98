"""A tick that looks only at its scope (blackwidow.tick_scope) decides and writes exactly what a tick that looks
at every subscription does. Random sequences of admin writes, spawn events, silent nodes and failed sends run
through both, tick after tick, and every plan and every write must be equal."""
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from blackwidow import poll_pages, reload, tick_scope
from blackwidow.decide import Polled, Rules, decide, liveness, settle
from blackwidow.quota.arithmetic import Params
from blackwidow.quota.leasing import LeaseRound, QuotaMemory
from blackwidow.quota.store import LeaseSnapshot
from blackwidow.sends import Outcome
from blackwidow.store.coordination import NodeView, Snapshot, SubscriptionView, apply_settlement
from shared.wire import StatusReport, SubscriptionSpec, SubscriptionStatus

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
WIKI = "https://en.wikipedia.org/w/api.php"
NODES = ("A", "B", "C")
RULES = Rules(node_failures=99, routing="modulo")       # a silent node stays live: the node set never changes


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
        node = self.rng.choice(NODES)
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

    def polls(self, silent: set[str]) -> Polled:
        reports, statuses, changed = {}, {}, {}
        for node in NODES:
            if node in silent:
                continue
            now = dict(self.runs[node])
            before = self.sent[node]
            changed[node] = frozenset({sid for sid in now if before.get(sid) != now[sid]}
                                      | (before.keys() - now.keys()))
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
                self.runs[o.action.node_id][spec.id] = SubscriptionStatus(
                    id=spec.id, state="assigned", revisions=old.revisions if old else 0, spec=spec.to_dict())
            done.append(Outcome(o.action, ok, "assigned" if ok and isinstance(o.action, reload.Put) else None))
        return done


def planned(plan: reload.Plan) -> list[Outcome]:
    return [Outcome(a, True) for a in (*plan.drops, *plan.puts)]


@pytest.mark.parametrize("seed", range(12))
def test_a_scoped_tick_plans_and_writes_what_a_whole_tick_does(seed):
    rng = random.Random(seed)
    world = World(rng)
    for _ in range(20):
        world.create()
    carry: frozenset[str] | None = None
    routed_over: frozenset[str] | None = None
    now = T0
    scoped_ticks = 0
    for step in range(120):
        for _ in range(rng.randint(0, 3)):
            rng.choice([world.create, world.patch, world.delete, world.spawn_event, world.spawn_event,
                        world.spawn_event])()
        silent = {n for n in NODES if rng.random() < 0.1}
        polled = world.polls(silent)
        now += timedelta(seconds=rng.choice([2, 5, 40]))
        live = liveness(world.snap, polled, RULES)[1]
        written, world.written = frozenset(world.written), set()
        scope = tick_scope.scope(carry, routed_over=routed_over, live=live, leased=frozenset(), written=written,
                                 reported=polled.changed)
        whole = decide(world.snap, polled, no_leases(now), RULES, now, previous_live=routed_over or live,
                       memory=QuotaMemory())
        scoped = decide(world.snap, polled, no_leases(now), RULES, now, previous_live=routed_over or live,
                        memory=QuotaMemory(), scope=scope)
        assert scoped.plan == whole.plan, f"step {step}"
        outcomes = world.apply(planned(whole.plan))
        expected = settle(world.snap, whole, outcomes, now, RULES)
        got = settle(world.snap, scoped, outcomes, now, RULES)
        assert (got.assignments, sorted(got.deleted), got.subscriptions, got.reload) == \
            (expected.assignments, sorted(expected.deleted), expected.subscriptions, expected.reload), f"step {step}"
        apply_settlement(world.snap, expected.assignments, expected.deleted, expected.subscriptions)
        silent_holdings = {sid for n in silent for sid in world.sent[n]}
        carry = tick_scope.unsettled(plan=scoped.plan, desired=scoped.desired, states=scoped.state,
                                     assignments=world.snap.assignments, answered=polled.reports,
                                     silent_holdings=silent_holdings)
        routed_over = whole.live
        scoped_ticks += scope is not None
        # the next polls name the same ids whether they look for copies elsewhere among the carried ids alone
        index = Snapshot(world.snap.nodes, world.snap.subscriptions, world.snap.assignments).by_node
        every = poll_pages.named(world.snap.assignments, world.sent, world.snap.subscriptions)
        few = poll_pages.named(world.snap.assignments, world.sent, world.snap.subscriptions, by_node=index,
                               candidates=carry)
        assert {n: sorted(ids) for n, ids in few.items()} == {n: sorted(ids) for n, ids in every.items()}
    assert scoped_ticks > 100          # the comparison ran on scoped ticks, not on fallbacks to whole ones


def test_whatever_cannot_be_proven_unchanged_is_a_whole_tick():
    live = frozenset({"A", "B"})
    base = dict(carry=frozenset({"x"}), routed_over=live, live=live, leased=frozenset(), written=frozenset({"y"}),
                reported={"A": frozenset({"z"}), "B": frozenset()})
    assert tick_scope.scope(**base) == {"x", "y", "z"}
    for name, change in [("first tick", {"carry": None}), ("snapshot read whole", {"written": None}),
                         ("node set changed", {"live": frozenset({"A"})}),
                         ("a whole report", {"reported": {"A": None, "B": frozenset()}}),
                         ("a tenant with a quota", {"leased": frozenset({"t"})})]:
        assert tick_scope.scope(**{**base, **change}) is None, name
