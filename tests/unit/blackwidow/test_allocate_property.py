"""blackwidow.upstream.allocate over many ticks: a simulated hub store (holds written ahead, dropped after a
cycle), ticks that crash before writing, polls that get lost, nodes that come and go. Whatever happens, the
holds ever written and the windows nodes ever received keep the safety rule; in steady state, shares,
freshness and budget use are what docs/upstream.md promises; and while demand comes and goes, no node that
wants a slot waits long behind holders with nothing to do."""
import random
from collections import deque
from dataclasses import dataclass, field, replace

import pytest

from blackwidow.upstream.allocate import Demand, IdentityState, Params, allocate
from blackwidow.upstream.limits import Limits, binding_rate, default_limits
from blackwidow.upstream.rounds import changes_use
from blackwidow.upstream.slots import edge_violations, violations
from shared.wire import Budget, Window

P = Params()
POLL_S = 2.0
ROUND_S = 0.25
ROUNDS = int(POLL_S / ROUND_S) - 1        # budget rounds between two ticks


@dataclass
class Sim:
    limits: Limits
    now: float = 50_000.0
    gen: int = 0
    paused_until: float | None = None
    store: dict = field(default_factory=dict)       # (slot, start) -> Hold: the hub database
    written: dict = field(default_factory=dict)     # every hold ever written, newest version
    received: dict = field(default_factory=dict)    # node -> newest Budget it applied
    sent: list = field(default_factory=list)        # (node, Window, gen) ever applied by a node
    released: dict = field(default_factory=dict)    # node -> the Budget gen it gave back, while it reports it
    give_backs: list = field(default_factory=list)  # (node, gen, time): it starts nothing under gen <= gen after time
    asked: set = field(default_factory=set)         # nodes the hub asked to give their windows back
    starts: deque = field(default_factory=deque)    # (time, node, tenant, requests): backfill the nodes served
    counts: dict = field(default_factory=dict)      # node -> {tenant: requests over the last cycle}

    def give_back(self, node: str) -> None:
        """The node reports it gave back its windows (hub-side: known from now on)."""
        self.asked.discard(node)
        if node not in self.released and node in self.received:
            self.released[node] = self.received[node].gen
            self.give_backs.append((node, self.received[node].gen, self.now))

    def tick(self, demand: dict, weights: dict, *, crash: bool = False, lost: frozenset = frozenset(),
             round_: bool = False) -> None:
        """A tick, or with `round_` a budget round between ticks (blackwidow.budget_rounds): written and
        delivered only where a node's Budget changes what it may do, ROUND_S later."""
        state = IdentityState("w.example.org", self.limits, self.gen, self.paused_until, tuple(self.store.values()))
        plan = allocate(state, demand, weights, self.now, P)
        if round_:
            deliver = {n for n, b in plan.budgets.items() if changes_use(self.received.get(n), b)}
            crash = crash or not deliver
            lost = lost | (plan.budgets.keys() - deliver)
        if self.paused_until is not None and self.paused_until > self.now:
            for h in plan.writes:                    # nothing starts before the pause ends
                old = self.store.get((h.slot, h.start))
                assert h.start >= self.paused_until or (old is not None and old.end >= self.paused_until)
        if not crash:                                # write ahead, then poll
            self.gen = plan.gen
            for h in plan.drops:                     # in the order blackwidow.store.identities.save uses
                del self.store[(h.slot, h.start)]
                if h.end > self.now:                 # given back before it began: void
                    del self.written[(h.slot, h.start)]
            for h in plan.cuts + plan.writes:
                self.store[(h.slot, h.start)] = self.written[(h.slot, h.start)] = h
            for node, budget in plan.budgets.items():
                if node in lost:
                    continue
                old = self.received.get(node)
                assert old is None or budget.gen > old.gen
                self.received[node] = budget
                if budget.gen > self.released.get(node, budget.gen):
                    del self.released[node]
                if budget.give_back:
                    self.asked.add(node)
                self.sent += [(node, w, budget.gen) for w in budget.windows]
        self.now += ROUND_S if round_ else POLL_S

    def serve(self) -> None:
        """This poll's requests under each hold, as the spawn's queue picks them: for the node's tenant
        furthest behind per weight, counting the other nodes' requests its Budget names and its own."""
        for h in self.written.values():
            budget = self.received.get(h.node)
            requests = round(h.overlap(self.now, self.now + POLL_S) * h.rate_per_s * 10)
            if budget is None or not budget.weights or not requests:
                continue
            mine = self.counts.setdefault(h.node, {})
            for _ in range(requests):
                t = min(budget.weights, key=lambda x: ((budget.served.get(x, 0.0) + mine.get(x, 0.0))
                                                       / budget.weights[x], x))
                mine[t] = mine.get(t, 0.0) + 0.1
                self.starts.append((self.now, h.node, t, 0.1))
        while self.starts and self.starts[0][0] <= self.now - P.cycle_s:
            _, node, t, n = self.starts.popleft()
            self.counts[node][t] -= n

    def served(self, lo: float, hi: float) -> dict[str, float]:
        out: dict[str, float] = {}
        for at, _, t, n in self.starts:
            if lo <= at < hi:
                out[t] = out.get(t, 0.0) + n
        return out

    def check_safe(self) -> None:
        rate = binding_rate(self.limits)
        assert violations(list(self.written.values()), self.limits.in_flight, rate, P.handover_s) == []
        # exact instants: where a node gave back (it had stopped before it said so), and where a hold planned
        # after that give-back, by the leader that cut it, starts
        exact = {t for _, _, t in self.give_backs} | {h.start for h in self.written.values() if h.after_give_back}
        assert edge_violations(set(self.used()), self.limits.in_flight, rate, P.handover_s, exact) == []

    def used(self):
        """The windows as nodes may use them: a window given back ends when its node said so."""
        for node, w, gen in self.sent:
            end = min([t for n, g, t in self.give_backs if n == node and gen <= g], default=w.end)
            if end > w.start:
                yield node, Window(w.start, min(w.end, end), w.slots, w.rate_per_s)

    def slot_seconds(self, lo: float, hi: float) -> dict[str, float]:
        out: dict[str, float] = {}
        for h in self.written.values():
            out[h.node] = out.get(h.node, 0.0) + h.overlap(lo, hi)
        return out


def _random_demand(rng: random.Random, nodes: list[str], sim: Sim) -> dict[str, Demand]:
    out = {}
    for node in nodes:
        if rng.random() < 0.15:
            continue                                  # did not answer: its demand is not known this tick
        if rng.random() < 0.1 or node in sim.asked and rng.random() < 0.7:
            sim.give_back(node)                       # idle for a moment, or asked and nothing in flight
        if rng.random() < 0.1:                        # reads a feed between reads, nothing else
            out[node] = Demand(released_gen=sim.released.get(node), following=True)
            continue
        out[node] = Demand(fresh={t: rng.choice([0, 0, 0, 1]) for t in ("t1", "t2")},
                           backfill={t: rng.choice([0, 1, 3, 50]) for t in ("t1", "t2", "t3")},
                           released_gen=sim.released.get(node), following=rng.random() < 0.3)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_random_ticks_keep_every_written_hold_and_every_received_window_safe(seed):
    rng = random.Random(seed)
    limits = rng.choice([default_limits("en.wikipedia.org"), default_limits("en.wikipedia.org", "bot"),
                         Limits(2, 4.0, None), Limits(5, 20.0, 600)])
    sim = Sim(limits)
    nodes = [f"n{i}" for i in range(rng.randint(1, 5))]
    weights = {"t1": rng.choice([0.5, 1.0, 4.0]), "t2": 1.0, "t3": rng.choice([1.0, 2.0])}
    for _ in range(400):
        if rng.random() < 0.03:
            nodes.append(f"n{len(nodes)}")            # a node joins
        if rng.random() < 0.03 and len(nodes) > 1:
            nodes.remove(rng.choice(nodes))           # a node dies: its holds still count until they end
        if rng.random() < 0.01:
            sim.paused_until = sim.now + rng.uniform(1, 60)   # a 429 or maxlag somewhere
        lost = frozenset(n for n in nodes if rng.random() < 0.1)
        sim.tick(_random_demand(rng, nodes, sim), weights, crash=rng.random() < 0.05, lost=lost)
    sim.check_safe()
    assert sim.written


@pytest.mark.parametrize("seed", range(8))
def test_random_ticks_with_budget_rounds_between_them_stay_safe(seed):
    """As above, with ROUNDS budget rounds between ticks: plans written and delivered only to the nodes whose
    Budget changes, some of them lost, nodes giving back in any round."""
    rng = random.Random(1000 + seed)
    limits = rng.choice([default_limits("en.wikipedia.org"), default_limits("en.wikipedia.org", "bot"),
                         Limits(2, 4.0, None)])
    sim = Sim(limits)
    nodes = [f"n{i}" for i in range(rng.randint(2, 5))]
    weights = {"t1": 1.0, "t2": 2.0, "t3": 1.0}
    for i in range(1200):
        if rng.random() < 0.01:
            nodes.append(f"n{len(nodes)}")
        if rng.random() < 0.01 and len(nodes) > 1:
            nodes.remove(rng.choice(nodes))
        if rng.random() < 0.003:
            sim.paused_until = sim.now + rng.uniform(1, 60)
        lost = frozenset(n for n in nodes if rng.random() < 0.1)
        sim.tick(_random_demand(rng, nodes, sim), weights, crash=rng.random() < 0.05, lost=lost,
                 round_=i % (ROUNDS + 1) != 0)
    sim.check_safe()
    assert sim.written


def _run(sim: Sim, demand: dict, weights: dict, seconds: float, *, rounds: bool = False) -> None:
    """Ticks with fixed lanes; a node asked to give its windows back does so in its next report; the
    holders serve their tenants between ticks and report what they served over the cycle. With `rounds`,
    ROUNDS budget rounds between ticks, and a node asked gives back in its next round's answer."""
    for _ in range(int(seconds / POLL_S)):
        for step in range(ROUNDS + 1 if rounds else 1):
            for node in sorted(sim.asked):
                sim.give_back(node)
            sim.tick({n: replace(d, released_gen=sim.released.get(n), served=dict(sim.counts.get(n, {})))
                      for n, d in demand.items()}, weights, round_=step > 0)
        sim.serve()


@pytest.mark.parametrize("limits", [default_limits("en.wikipedia.org"), default_limits("en.wikipedia.org", "bot")])
def test_slot_time_is_split_by_tenant_weight_over_a_cycle_and_the_budget_is_used(limits):
    demand = {"a": Demand(backfill={"t1": 5}), "b": Demand(backfill={"t2": 5, "t1": 5}),
              "c": Demand(backfill={"t3": 5})}
    weights = {"t1": 1.0, "t2": 2.0, "t3": 3.0}
    sim = Sim(limits)
    start = sim.now
    _run(sim, demand, weights, P.cycle_s)
    per_node = sim.slot_seconds(start, sim.now)
    assert sum(per_node.values()) / (limits.in_flight * P.cycle_s) >= 0.9
    per_tenant = sim.served(start, sim.now)            # the requests the holders' queues gave each tenant
    total = sum(per_tenant.values())
    for tenant, weight in weights.items():
        assert per_tenant[tenant] >= 0.9 * total * weight / sum(weights.values()), (tenant, per_tenant)
    sim.check_safe()


def test_tenant_shares_hold_within_two_minutes_when_many_nodes_each_hold_a_few_of_their_sources():
    """100 nodes, 300 sources of three tenants scattered over them, 3 slots: far fewer holds in a cycle
    than nodes, so the tenants are balanced by which nodes get the holds and by whom those serve."""
    rng = random.Random(5)
    weights = {"t1": 1.0, "t2": 2.0, "t3": 3.0}
    lanes: dict[str, dict[str, int]] = {}
    for k in range(300):
        node = lanes.setdefault(f"n{rng.randrange(100)}", {})
        node[f"t{k % 3 + 1}"] = node.get(f"t{k % 3 + 1}", 0) + 1
    sim = Sim(Limits(3, 10.0, 600))
    start = sim.now
    _run(sim, {n: Demand(backfill=b) for n, b in lanes.items()}, weights, 120)
    per_tenant = sim.served(start, sim.now)
    total = sum(per_tenant.values())
    for tenant, weight in weights.items():
        assert per_tenant[tenant] >= 0.9 * total * weight / sum(weights.values()), (tenant, per_tenant)
    assert sum(sim.slot_seconds(start, sim.now).values()) / (3 * 120) >= 0.9
    sim.check_safe()


def test_a_node_with_freshness_demand_is_served_within_two_polls_and_a_handover_however_large_the_backfill():
    sim = Sim(default_limits("en.wikipedia.org"))
    backfill = {f"b{i}": Demand(backfill={"t1": 10_000}) for i in range(4)}
    weights = {"t1": 1000.0}
    _run(sim, backfill, weights, 300)
    for _ in range(3):
        asked = sim.now
        _run(sim, {**backfill, "f": Demand(fresh={"t2": 1})}, weights, POLL_S)
        for _ in range(100):
            if any(h.node == "f" and h.end > asked for h in sim.written.values()):
                break
            _run(sim, {**backfill, "f": Demand(fresh={"t2": 1})}, weights, POLL_S)
        got = min(h.start for h in sim.written.values() if h.node == "f" and h.end > asked)
        # the holder is asked at once, gives back in its next report, the next tick hands the slot on
        assert got - asked <= 2 * POLL_S + P.handover_s
        _run(sim, backfill, weights, 60)
    sim.check_safe()


@pytest.mark.parametrize("limits, fresh_nodes", [
    (default_limits("en.wikipedia.org"), 2), (default_limits("en.wikipedia.org", "bot"), 4)])
def test_a_node_with_only_backfill_gets_turns_while_other_nodes_always_have_freshness_work(limits, fresh_nodes):
    """More nodes with freshness work all the time than there are slots: each turn one of them holds nothing
    and asks a holder back. The backfill node still gets one turn in fresh_run + 1, and its tenant requests."""
    sim = Sim(limits)
    demand = {**{f"f{i}": Demand(fresh={"t1": 1}) for i in range(fresh_nodes)}, "b": Demand(backfill={"t2": 100})}
    start = sim.now
    _run(sim, demand, {}, 600)
    turns = sorted({(h.start, h.node) for h in sim.written.values() if h.start >= start})
    backfill = [i for i, (_, node) in enumerate(turns) if node == "b"]
    assert backfill and backfill[0] <= P.fresh_run * limits.in_flight
    assert max(b - a for a, b in zip(backfill, backfill[1:] + [len(turns)])) <= P.fresh_run * limits.in_flight + 1
    served = sim.served(start, sim.now)
    assert served.get("t2", 0) >= 0.1 * sum(served.values())
    sim.check_safe()


def test_with_budget_rounds_a_node_with_freshness_demand_is_served_within_two_rounds_and_a_handover():
    """Rounds between ticks: the holder is asked in the round that learns the demand, answers in the next, and
    that round hands the slot on one handover gap later: about a second instead of two ticks."""
    sim = Sim(default_limits("en.wikipedia.org"))
    backfill = {f"b{i}": Demand(backfill={"t1": 10_000}) for i in range(4)}
    weights = {"t1": 1000.0}
    _run(sim, backfill, weights, 300, rounds=True)
    for _ in range(3):
        asked = sim.now
        want = {**backfill, "f": Demand(fresh={"t2": 1})}
        for _ in range(100):
            for node in sorted(sim.asked):
                sim.give_back(node)
            sim.tick({n: replace(d, released_gen=sim.released.get(n)) for n, d in want.items()}, weights,
                     round_=True)
            if any(h.node == "f" and h.end > asked for h in sim.written.values()):
                break
        got = min(h.start for h in sim.written.values() if h.node == "f" and h.end > asked)
        assert got - asked <= 2 * ROUND_S + P.handover_s
        _run(sim, backfill, weights, 60, rounds=True)
    sim.check_safe()


def test_a_window_a_lost_poll_never_delivered_is_still_respected():
    sim = Sim(default_limits("en.wikipedia.org"))
    sim.tick({"a": Demand(backfill={"t1": 1})}, {}, lost=frozenset({"a"}))
    (hold,) = sim.store.values()
    sim.tick({"b": Demand(backfill={"t1": 1})}, {})
    assert sim.received["b"].windows == ()
    _run(sim, {"b": Demand(backfill={"t1": 1})}, {}, hold.end - sim.now + P.handover_s + POLL_S)
    assert sim.received["b"].windows[0].start >= hold.end + P.handover_s
    assert isinstance(sim.received["b"], Budget) and isinstance(sim.received["b"].windows[0], Window)
    sim.check_safe()


# Polls during which some node wants a request while no node that wants one holds a running slot: the hub
# sees the demand (one), asks an idle holder back or finds the slot free (two), and the next holder's hold
# starts one handover gap later, within the poll after that (three)
IDLE_POLLS = 3


@pytest.mark.parametrize("seed", range(8))
def test_no_identity_stays_with_idle_holders_while_a_node_wants_a_slot(seed):
    """Liveness: demand comes and goes on random nodes (backfill, freshness, feed readers that keep their slot
    between reads); a node gives back when idle (a spawn does after RELEASE_IDLE_S, within a poll) and, when
    asked, in its next report (after draining). Whenever a node wants a request, a node that wants one holds
    a running slot within IDLE_POLLS polls: no holder with nothing to do keeps the identity, and no ask and
    grant go round in circles."""
    rng = random.Random(seed)
    sim = Sim(rng.choice([default_limits("en.wikipedia.org"), default_limits("en.wikipedia.org", "bot")]))
    nodes = [f"n{i}" for i in range(rng.randint(2, 6))]
    lanes = {n: Demand() for n in nodes}
    kinds = [Demand(), Demand(backfill={"t1": 3}), Demand(fresh={"t2": 1}), Demand(backfill={"t2": 1}, fresh={"t1": 1}),
             Demand(following=True), Demand(backfill={"t1": 2}, following=True)]
    worst = streak = 0
    for _ in range(600):
        for n in nodes:
            if rng.random() < 0.08:
                lanes[n] = rng.choice(kinds)
        wanting = {n for n, d in lanes.items() if d.sources > 0}
        for n in nodes:
            if n in sim.asked or (n not in wanting and not lanes[n].following):
                sim.give_back(n)
        sim.tick({n: replace(d, released_gen=sim.released.get(n)) for n, d in lanes.items()}, {"t1": 1.0, "t2": 2.0})
        running = {h.node for h in sim.store.values() if h.start <= sim.now < h.end}
        streak = streak + 1 if wanting and not running & wanting else 0
        worst = max(worst, streak)
    sim.check_safe()
    assert worst <= IDLE_POLLS, worst
