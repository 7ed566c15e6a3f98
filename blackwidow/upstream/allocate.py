"""Fair allocation of one identity's slots to nodes as windows in hub time. Pure: no I/O, no clock.

Each tick, every slot whose current hold ends within `horizon_s` (or that is free) gets its next hold of
`window_s`: the node that keeps it has its hold extended without a gap; another node starts `handover_s`
after the previous hold ends. The next holder is, in order: a node with freshness demand that holds no
slot, unless the last `fresh_run` turns all went to such nodes and no other node held a slot meanwhile (then
the turn is a node's without freshness work that holds nothing, not asked back for `backfill_turn_s`); else the
node furthest below its
weighted share of slot-time over the last `cycle_s` (the current holder keeps the slot while it is within
`keep_s` of that). A node's share is the sum, over tenants,
of the tenant's weighted share (weight over the weights of tenants with demand) split across nodes by the
tenant's waiting sources. A node holds at most as many slots at once as it has sources waiting. Nothing
starts before a pause ends. Holds already written (by this or an earlier leader) are never moved or cut.
"""
import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from blackwidow.upstream.limits import Limits, binding_rate
from blackwidow.upstream.slots import EPS, Hold, node_windows, violations
from shared.hashing import stable_hash
from shared.wire import Budget


@dataclass(frozen=True)
class Params:
    window_s: float = 15.0         # length of one hold (the budget cycle's unit)
    handover_s: float = 1.0        # gap between two nodes' holds on a slot: 2 x BW_MAX_CLOCK_SKEW_S
    horizon_s: float = 4.0         # plan a slot's next hold once its current one ends this soon (2 polls)
    cycle_s: float = 900.0         # shares are balanced over this span; holds are kept this long after
    # the holder keeps its slot while it is at most this much slot-time behind the node furthest below its
    # share: every handover idles the slot for the gap plus the clock-skew margins at both ends
    keep_s: float = 15.0
    pause_jitter_s: float = 2.0    # a node resumes after a pause up to this much later than the others
    # turns in a row for nodes with freshness work while a node with only backfill waits: the next is
    # backfill's (the spawn's FRESH_RUN, spawn/budget_rules.py, is the same rule among one node's sources)
    fresh_run: int = 4
    # a backfill turn is not asked back before its hold has run this long (a poll): asked at once, its
    # holder would start no request; asked after, it lasts about as long as a fresh node's turn
    backfill_turn_s: float = 2.0


@dataclass(frozen=True)
class Demand:
    """A node's IdentityUse lanes: sources waiting, per tenant."""
    fresh: Mapping[str, int] = field(default_factory=dict)
    backfill: Mapping[str, int] = field(default_factory=dict)
    released_gen: int | None = None    # the node gave back its holds written up to this gen
    served: Mapping[str, float] = field(default_factory=dict)   # backfill requests per tenant over the cycle
    following: bool = False            # a feed reader of the identity runs there: it reads every few seconds

    @property
    def sources(self) -> int:
        return sum(self.fresh.values()) + sum(self.backfill.values())

    @property
    def has_fresh(self) -> bool:
        return any(n > 0 for n in self.fresh.values())

    def fresh_turn(self, fresh_anywhere: bool) -> bool:
        """Whether the node takes turns with the nodes that have freshness work: its own, or, while any node
        has some, a feed read waiting (a reader's turn serves its read first; without freshness work
        anywhere, its reads wait like backfill and never take the slot from one)."""
        return self.has_fresh or (self.following and self.sources > 0 and fresh_anywhere)

    def of(self, tenant: str) -> int:
        return self.fresh.get(tenant, 0) + self.backfill.get(tenant, 0)


def fresh_turns(demand: Mapping[str, Demand]) -> frozenset[str]:
    """The nodes taking turns at the slot for freshness (Demand.fresh_turn), one rule for allocate() and
    give_back_asks()."""
    fresh_anywhere = any(d.has_fresh for d in demand.values())
    return frozenset(n for n, d in demand.items() if d.fresh_turn(fresh_anywhere))


def _holds_nothing(holds: Iterable[Hold], node: str, now: float) -> bool:
    return not any(h.node == node and h.end > now for h in holds)


def _turns_before(holds: Iterable[Hold], start: float, n: int) -> list[Hold]:
    """The last `n` turns granted before `start`: holds by start (an extended hold is one turn)."""
    return sorted((h for h in holds if h.start < start), key=lambda h: (h.start, h.slot), reverse=True)[:n]


def _fresh_run_before(holds: Sequence[Hold], start: float, turns: frozenset[str], p: Params) -> bool:
    """Whether the last `fresh_run` turns before `start` all went to nodes with freshness work and no node
    without any held a slot from the first of them on (a hold given back and extended is not a new turn)."""
    last = _turns_before(holds, start, p.fresh_run)
    if len(last) < p.fresh_run or any(h.node not in turns for h in last):
        return False
    since = min(h.start for h in last)
    return not any(h.node not in turns and h.end > since and h.start < start for h in holds)


def backfill_due(holds: Sequence[Hold], turns: frozenset[str], p: Params) -> bool:
    """Whether the next turn goes past the nodes with freshness work: the last `fresh_run` turns all went to
    them, and no other node held a slot meanwhile. Freshness goes first but never for good, across nodes as
    among one node's sources: with two nodes or more that always have some, a node with only backfill would
    otherwise never hold the slot."""
    return _fresh_run_before(holds, math.inf, turns, p)


def backfill_turn(hold: Hold, holds: Sequence[Hold], turns: frozenset[str], now: float, p: Params) -> bool:
    """Whether `hold` is a backfill turn that is not asked back yet: its node has no freshness work, it came
    after a fresh run (backfill_due), and it began less than `backfill_turn_s` ago (a holder asked back at
    once would start no backfill request: spawn/budget_rules.py, drains)."""
    if hold.node in turns or now >= hold.start + p.backfill_turn_s:
        return False
    return _fresh_run_before(holds, hold.start, turns, p)


@dataclass(frozen=True)
class IdentityState:
    id: str                        # the wiki host
    limits: Limits
    gen: int                       # generation of the budgets sent last
    paused_until: float | None     # hub epoch seconds
    holds: tuple[Hold, ...]        # every hold written and not yet dropped


@dataclass(frozen=True)
class Plan:
    gen: int                                 # the identity's generation for this tick's budgets
    writes: tuple[Hold, ...]                 # new holds and extended ones (key: slot, start)
    drops: tuple[Hold, ...]                  # holds ended more than cycle_s ago, and given back before they began
    budgets: dict[str, Budget]               # by node id
    targets: dict[str, float]                # each node's share of slot-time (for operators)
    cuts: tuple[Hold, ...] = ()              # holds given back while they ran: their new, earlier end


def pause_jitter(node: str, p: Params) -> float:
    """Deterministic per node, in [0, pause_jitter_s): nodes do not all resume at the same instant."""
    return (stable_hash(node) % 1000) / 1000 * p.pause_jitter_s


def tenant_shares(demand: Mapping[str, Demand], weights: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """{node: {tenant: share of the identity's slot-time}}: a tenant with demand gets weight / sum of the
    weights of tenants with demand, split over nodes by its waiting sources there."""
    totals: dict[str, int] = {}
    for d in demand.values():
        for tenant in {*d.fresh, *d.backfill}:
            totals[tenant] = totals.get(tenant, 0) + d.of(tenant)
    totals = {t: n for t, n in totals.items() if n > 0}
    weight_sum = sum(weights.get(t, 1.0) for t in totals)
    out: dict[str, dict[str, float]] = {}
    for node, d in demand.items():
        shares = {t: weights.get(t, 1.0) / weight_sum * d.of(t) / totals[t]
                  for t in sorted({*d.fresh, *d.backfill}) if d.of(t) > 0}
        if shares:
            out[node] = shares
    return out


def node_split(shares: Mapping[str, float], weights: Mapping[str, float]) -> dict[str, float]:
    """How a node's slot-time splits over its tenants (its Budget.weights): by their weights."""
    total = sum(weights.get(t, 1.0) for t in shares)
    return {t: weights.get(t, 1.0) / total for t in shares}


def _tenant_targets(shares: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """{tenant: its weighted share of the slot-time}: the sum of its shares over the nodes."""
    out: dict[str, float] = {}
    for node_shares in shares.values():
        for tenant, share in node_shares.items():
            out[tenant] = out.get(tenant, 0.0) + share
    return out


def tenant_slot_time(demand: Mapping[str, Demand], holds: Iterable[Hold], split: Mapping[str, Mapping[str, float]],
                     tenants: Iterable[str], per_slot: float, now: float) -> dict[str, float]:
    """Slot-seconds each tenant has had over the cycle and will have from the holds written: the backfill
    requests the nodes report (one is 1 / per_slot seconds of a slot), plus what the holds still to run
    give it, split as their nodes' weights split them. Measured, not inferred from the holds: a holder
    serves whichever of its tenants is furthest behind, so its holds say little about whom they served."""
    out = {t: sum(d.served.get(t, 0.0) for d in demand.values()) / per_slot for t in tenants}
    for h in holds:
        for tenant, part in split.get(h.node, {}).items():
            out[tenant] += h.overlap(now, math.inf) * part
    return out


def _deficits(options: Iterable[str], targets: Mapping[str, float], received: Mapping[str, float],
              split: Mapping[str, Mapping[str, float]], tenant_received: Mapping[str, float],
              tenant_targets: Mapping[str, float]) -> dict[str, float]:
    """Slot-time each candidate node is behind: the mean of its own deficit against its share among the
    candidates and of how far the tenant furthest behind among its own is (the one its queue serves
    first). The node's term alone balances tenants only once every node has had its turn, which with
    many nodes takes longer than a cycle; where each node serves one tenant, the two terms are equal."""
    names = list(options)
    total = sum(received[n] for n in names)
    node_total = sum(targets[n] for n in names)
    all_received = sum(tenant_received.values())
    behind = {t: share * all_received - tenant_received[t] for t, share in tenant_targets.items()}
    return {n: (targets[n] / node_total * total - received[n] + max(behind[t] for t in split[n])) / 2 for n in names}


def _next_hold(slot: int, node: str, last: Hold | None, earliest: float, p: Params, rate: float,
               given_back: bool = False) -> Hold:
    """The hold `node` would get next on `slot`: the current one extended when it is the node's and runs
    until `earliest` at least, else a new one from `earliest`, after the current one (plus the handover
    gap when it is another node's, unless this allocation cut it where its node gave it back)."""
    if last is not None and last.node == node and last.end >= earliest:
        return replace(last, end=last.end + p.window_s)
    if last is None:
        return Hold(slot, node, earliest, earliest + p.window_s, rate)
    other = last.node != node
    start = max(earliest, last.end + (p.handover_s if other and not given_back else 0.0))
    return Hold(slot, node, start, start + p.window_s, rate, after_give_back=other and given_back)


def _reader_hold(slot: int, last: Hold | None, holds: Sequence[Hold], demand: Mapping[str, Demand],
                 earliest: float, p: Params, rate: float) -> Hold | None:
    """A slot nobody waits for goes to a node that reads the identity's feed and holds no other slot (its
    current holder first): its next read then starts at once, not after a round trip through the hub. It
    is asked for the slot back as soon as another node wants it (give_back_asks)."""
    readers = [n for n, d in sorted(demand.items()) if d.following and not d.sources and
               not any(h.node == n and h.end > earliest and h.slot != slot for h in holds)]
    if not readers:
        return None
    node = last.node if last is not None and last.node in readers else readers[0]
    return _next_hold(slot, node, last, earliest, p, rate)


def _held_until(last: Hold | None, node: str) -> float:
    """Where new slot-time of `node` on a slot begins to count: the end of its own hold there."""
    return last.end if last is not None and last.node == node else -math.inf


def allocate(state: IdentityState, demand: Mapping[str, Demand], weights: Mapping[str, float], now: float,
             p: Params) -> Plan:
    """`demand`: the live nodes' latest IdentityUse lanes for this identity (a node absent or without
    waiting sources gets no new hold); `weights`: tenant weights (missing: 1.0)."""
    limits = state.limits
    rate = binding_rate(limits)
    per_slot = rate / limits.in_flight
    shares = tenant_shares(demand, weights)
    targets = {node: sum(s.values()) for node, s in shares.items()}
    holds, cuts, given_back = released(state.holds, demand, now)
    rested = {h.node for h in cuts}
    # holds written under other limits (a lowered in_flight or rate): nothing new starts before they end
    barrier = max((h.end + p.handover_s for h in holds if h.slot >= limits.in_flight
                   or h.rate_per_s > per_slot + EPS), default=-math.inf)
    pause = state.paused_until if state.paused_until is not None and state.paused_until > now else None
    lookback = now - p.cycle_s
    received = {node: sum(h.overlap(lookback, math.inf) for h in holds if h.node == node) for node in targets}
    split = {node: node_split(shares[node], weights) for node in targets}
    tenant_targets = _tenant_targets(shares)
    tenant_received = tenant_slot_time(demand, holds, split, tenant_targets, per_slot, now)
    writes: dict[tuple[int, float], Hold] = {}
    turns = fresh_turns(demand)
    # with one slot, every handover idles the whole identity, and nodes with freshness work hand it round all
    # the time: a slot given back goes on at once. With several, the other slots keep working through a gap,
    # and a node's windows merge slots whose holds begin at different instants, some after a give-back and
    # some not, so the rule stays the plain one there
    one_slot = limits.in_flight == 1

    def last_of(slot: int) -> Hold | None:
        return max((h for h in holds if h.slot == slot), key=lambda h: h.end, default=None)

    for slot in sorted(range(limits.in_flight), key=lambda s: (getattr(last_of(s), "end", -math.inf), s)):
        last = last_of(slot)
        if last is not None and last.end >= now + p.horizon_s:
            continue
        options = {}
        for node in targets:
            resume = -math.inf if pause is None else pause + pause_jitter(node, p)
            option = _next_hold(slot, node, last, max(now, resume, barrier), p, per_slot,
                                given_back=one_slot and any(last is c for c in cuts))
            lo = _held_until(last, node) if option.start == getattr(last, "start", None) else option.start
            busy = sum(1 for h in holds if h.node == node and h.start < option.end and h.end > lo)
            if busy < demand[node].sources:
                options[node] = option
        if not options:
            resume = -math.inf if pause is None else pause + p.pause_jitter_s
            reader = _reader_hold(slot, last, holds, demand, max(now, barrier, resume), p, per_slot)
            if reader is not None:
                if last is not None and reader.start == last.start:
                    holds.remove(last)
                holds.append(reader)
                writes[(slot, reader.start)] = reader
            continue
        deficit = _deficits(options, targets, received, split, tenant_received, tenant_targets)
        waiting = [n for n in options if n in turns and _holds_nothing(holds, n, now)]
        # a node that has just given its turn back goes after the others waiting: turns go round
        waiting = [n for n in waiting if n not in rested] or waiting
        if waiting and backfill_due(holds, turns, p):
            waiting = [n for n in options if n not in turns and _holds_nothing(holds, n, now)] or waiting
        best = max(waiting or options, key=lambda n: (deficit[n], -stable_hash(n)))
        if not waiting and last is not None and last.node in options and \
                deficit[last.node] >= deficit[best] - p.keep_s:
            best = last.node            # within keep_s of the best, the slot stays where it is: no handover gap
        hold = options[best]
        if last is not None and hold.start == last.start:      # extended
            holds.remove(last)
        received[best] += hold.overlap(max(lookback, _held_until(last, best)), math.inf)
        for tenant, part in split[best].items():
            tenant_received[tenant] += hold.overlap(max(now, _held_until(last, best)), math.inf) * part
        holds.append(hold)
        writes[(slot, hold.start)] = hold
    current = [h for h in holds if h.end > now and h.end > barrier - p.handover_s + EPS]
    if writes and violations(current, limits.in_flight, rate, p.handover_s):
        # never reached by construction; if it were, granting nothing new is always safe
        return _plan(state, tuple(state.holds), {}, (), (), demand, split, targets, now, p)
    asked = give_back_asks(holds, demand, now, p)
    # a hold given back and granted again in this plan (same slot and start): the write stands
    cuts = tuple(c for c in cuts if (c.slot, c.start) not in writes)
    given_back = tuple(h for h in given_back if (h.slot, h.start) not in writes)
    return _plan(state, tuple(holds), writes, cuts, given_back, demand, split, targets, now, p, asked)


def give_back_asks(holds: Sequence[Hold], demand: Mapping[str, Demand], now: float, p: Params) -> frozenset[str]:
    """The holders asked to give their slots back now. Every holder that only reads a feed, as soon as a
    node with demand holds nothing. And one for each node with freshness demand that holds nothing: a
    holder without freshness demand of its own first, whose holds run longest, else a holder with
    freshness demand, which first serves the freshness requests already waiting (spawn budget_rules.drains);
    never a holder in a backfill turn that is not over (backfill_turn).
    A holder gives back once that is done and nothing of its is in flight, the next tick cuts its holds,
    and the waiting node gets the slot one handover gap later instead of at the end of the hold."""
    turns = fresh_turns(demand)
    hungry = [n for n in demand if n in turns and _holds_nothing(holds, n, now)]
    wanting = any(d.sources and _holds_nothing(holds, n, now) for n, d in demand.items())
    until: dict[str, float] = {}
    for h in holds:
        if h.end > now:
            until[h.node] = max(until.get(h.node, h.end), h.end)
    idle = {n for n in until if n not in demand or not demand[n].sources}
    if not wanting:
        return frozenset()
    protected = {h.node for h in holds if h.end > now and backfill_turn(h, holds, turns, now, p)}
    rank = sorted(until.keys() - idle - protected, key=lambda n: (n in turns, -until[n], n))
    return frozenset(idle | set(rank[:len(hungry)]))


def released(holds: Sequence[Hold], demand: Mapping[str, Demand], now: float
             ) -> tuple[list[Hold], tuple[Hold, ...], tuple[Hold, ...]]:
    """(holds, cuts, dropped): the holds after the nodes' give-backs. A node that gave back its holds up to
    a gen starts no request under them from the moment it reported, which was before `now`: a running one
    ends at `now`, one still to come goes. Holds written after that gen were not in its report: they stay."""
    out, cuts, dropped = [], [], []
    for h in holds:
        gen = demand[h.node].released_gen if h.node in demand else None
        if gen is None or h.gen > gen or h.end <= now:
            out.append(h)
        elif h.start < now:
            cut = replace(h, end=now)
            out.append(cut)
            cuts.append(cut)
        else:
            dropped.append(h)
    return out, tuple(cuts), tuple(dropped)


def _others(total: Mapping[str, float], own: Mapping[str, float]) -> dict[str, float]:
    """The backfill requests of the other nodes per tenant: the total less the node's own."""
    return {t: round(n - own.get(t, 0.0), 3) for t, n in total.items() if n - own.get(t, 0.0) > EPS}


def _plan(state: IdentityState, holds: Sequence[Hold], writes: Mapping[tuple[int, float], Hold],
          cuts: Sequence[Hold], given_back: Sequence[Hold], demand: Mapping[str, Demand],
          split: Mapping[str, Mapping[str, float]], targets: dict[str, float], now: float, p: Params,
          asked: frozenset[str] = frozenset()) -> Plan:
    gen = state.gen + 1
    drops = tuple(h for h in holds if h.end < now - p.cycle_s) + tuple(given_back)
    nodes = sorted({*demand, *(h.node for h in holds if h.end > now)})
    limits = state.limits
    pause = state.paused_until if state.paused_until is not None and state.paused_until > now else None
    served: dict[str, float] = {}
    for d in demand.values():
        for tenant, n in d.served.items():
            served[tenant] = served.get(tenant, 0.0) + n
    budgets = {
        node: Budget(gen=gen, wiki_host=state.id, credential=limits.credential,
                     windows=node_windows(holds, node, now), slow_after_s=limits.slow_after_s,
                     slow_wait_s=limits.slow_wait_s, maxlag=limits.maxlag,
                     paused_until=None if pause is None else pause + pause_jitter(node, p),
                     weights=dict(split.get(node, {})), give_back=node in asked,
                     served=_others(served, demand[node].served if node in demand else {}), cycle_s=p.cycle_s)
        for node in nodes}
    return Plan(gen=gen, writes=tuple(replace(h, gen=gen) for h in writes.values()), drops=drops,
                budgets=budgets, targets=targets, cuts=tuple(replace(h, gen=gen) for h in cuts))
