"""Tenant quotas as leases: the arithmetic, pure (no I/O, no SQL, no clock). docs/quotas.md has the design
and the proof sketch; the poll tick (blackwidow/quota/leasing.py) feeds it and stores what it returns.

Each leased subscription has at most one node that may spend (its holder); the hub leases it a cap on
"revisions delivered" and, per node, remembers the highest cap that node may still apply (`held`).
A subscription's charge is the most it may have delivered or may still deliver anywhere:
max(count known, floor, held on every node). Grants never lift a tenant's charges above its quota.
"""
import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping


@dataclass(frozen=True)
class Params:
    ttl_s: float              # a lease lives this long on the spawn after it received it
    margin_s: float           # a poll is processed within this long after it was sent, or never
    settle_s: float           # after a quota is set, a copy running without lease is gone by then
    horizon_s: float          # a slice covers this long of consumption at the observed rate
    start_slice: int = 500    # first request of a subscription with no rate yet (one API batch)
    min_slice: int = 50
    max_slice: int = 50_000
    idle_after: int = 2       # reports caught up without growth (with headroom) before headroom may go back


UNKNOWN = "?"       # Holder.boot: some process may have applied a send of ours


@dataclass(frozen=True)
class Holder:
    """What one node may apply for one subscription."""
    gen: int                  # newest generation sent to this node
    cap: int                  # its cap
    held: int                 # highest cap the node may still apply (>= cap until it confirms gen)
    sent_at: float            # when that node was last sent this subscription's lease (hub clock)
    acked: bool = False       # the newest send was answered, so it is not in flight any more
    confirmed: bool = False   # the node reported applying `gen`
    # the node's process that answered for it (None: one send so far; UNKNOWN: sent more than once
    # without an answer); another process did not see our past
    boot: str | None = None


@dataclass(frozen=True)
class SubLease:
    """The hub's durable lease state of one subscription (it outlives the subscription until no
    holder is left, so a deleted subscription's lease still counts while a node may spend it)."""
    tenant_id: str
    gen: int = 0              # newest generation issued
    floor: int = 0            # held caps of holders that left without a final count
    floor_gen: int = 0        # a synced report at this generation or later reveals the real count
    seen: int = 0             # highest count any node reported
    holders: Mapping[str, Holder] = field(default_factory=dict)

    def charge(self, used: int = 0) -> int:
        return max(used, self.seen, self.floor, *(h.held for h in self.holders.values()))


@dataclass
class Dynamics:
    """Per-subscription consumption, kept in the scheduler's memory only (a restart re-learns it)."""
    rate: float | None = None             # revisions per second
    sample: tuple[int, float] | None = None   # (count, at) of the last report from its holder
    stalls: int = 0                       # consecutive reports without growth, with headroom


@dataclass(frozen=True)
class Sub:
    """A subscription of a tenant with a quota, as this tick sees it."""
    id: str
    used: int                             # revisions the hub records for it
    quota: int | None = None              # its own quota
    node: str | None = None               # live node it is assigned to; None: not to be run


@dataclass(frozen=True)
class Reported:
    """One subscription in a node's status report."""
    count: int
    running: bool                         # state == running (not waiting, failed, ...)
    quota: int | None = None              # quota of the spec the node runs
    lease_gen: int | None = None
    lease_cap: int | None = None
    synced: bool = False
    caught_up: bool = False               # its source has the page's whole history


@dataclass(frozen=True)
class TenantPlan:
    states: dict[str, SubLease]           # every state of the tenant after the tick's grants
    leases: dict[str, tuple[str, int, int]]   # sub id -> (node, gen, cap) sent this tick
    reserved: int                         # sum of charges after the grants
    unmet: int                            # demand the budget could not serve


def charge_of(state: SubLease | None, used: int) -> int:
    return used if state is None else state.charge(used)


def _fold(state: SubLease, holder: Holder) -> SubLease:
    """A holder leaves without a final count: what it may have delivered stays charged (floor) until
    a synced report under a later generation reveals the real count."""
    return replace(state, floor=max(state.floor, holder.held), floor_gen=state.gen + 1)


def _without(state: SubLease, node: str) -> SubLease:
    holders = {n: h for n, h in state.holders.items() if n != node}
    return replace(_fold(state, state.holders[node]), holders=holders)


def expire(state: SubLease, now: float, p: Params) -> SubLease:
    """Drop holders whose newest lease has surely expired on their node."""
    for node, h in sorted(state.holders.items()):
        if now > h.sent_at + p.ttl_s + p.margin_s:
            state = _without(state, node)
    return state


def waterfill(budget: int, requests: Mapping[str, int]) -> dict[str, int]:
    """Split `budget` max-min fairly over positive integer requests (ties in key order)."""
    alloc = {k: 0 for k in requests}
    items = sorted((r, k) for k, r in requests.items() if r > 0)
    left = max(0, budget)
    for i, (r, k) in enumerate(items):
        give = min(r, left // (len(items) - i))
        alloc[k] = give
        left -= give
    for r, k in sorted(items, key=lambda item: item[1]):
        if left == 0:
            break
        if alloc[k] < r:
            alloc[k] += 1
            left -= 1
    return alloc


def slice_for(d: Dynamics | None, p: Params) -> int:
    if d is None or d.rate is None:
        return p.start_slice
    return max(p.min_slice, min(p.max_slice, math.ceil(d.rate * p.horizon_s)))


def plan_tenant(tenant_id: str, quota: int, frozen: bool, running: Iterable[Sub], held: Mapping[str, SubLease],
                dynamics: Mapping[str, Dynamics], now: float, p: Params) -> TenantPlan:
    """This tick's caps for the tenant's subscriptions that run on a node.

    Safe whatever the inputs: a cap above a subscription's current charge is only granted out of
    quota - (sum of charges), so the charges never rise above the quota. `frozen`: copies of the
    tenant's subscriptions may run without a lease, so nothing grows."""
    subs = {s.id: s for s in running}
    states = {sid: expire(st, now, p) for sid, st in held.items()}
    charges = {sid: charge_of(states.get(sid), s.used) for sid, s in subs.items()}
    charges.update({sid: st.charge() for sid, st in states.items() if sid not in subs})
    reserved = sum(charges.values())

    floors: dict[str, int] = {}
    caps: dict[str, int] = {}
    nodes: dict[str, str] = {}
    for sid, s in sorted(subs.items()):
        st = states.get(sid) or SubLease(tenant_id)
        if s.node is None or any(n != s.node for n in st.holders):
            continue        # not running, or another node may still spend: the handover waits
        lo = max(s.used, st.seen, st.floor)
        holder = st.holders.get(s.node)
        cap = lo if holder is None else max(holder.cap, lo)
        if s.quota is not None:
            cap = max(lo, min(cap, s.quota))
        floors[sid], caps[sid], nodes[sid] = lo, cap, s.node

    unmet = 0
    if frozen:
        caps = dict(floors)
    elif caps:
        # what is left for the running ones once the others' charges are counted
        share = quota - (reserved - sum(charges[sid] for sid in caps))
        caps, unmet = _share(caps, floors, subs, charges, dynamics, share, quota - reserved, p)

    leases = {}
    for sid, cap in caps.items():
        st = states.get(sid) or SubLease(tenant_id)
        node = nodes[sid]
        old = st.holders.get(node)
        if old is not None and old.confirmed and old.cap == cap:
            new = replace(old, sent_at=now, acked=False, boot=_boot_after_send(old))     # renewal
        else:
            new = Holder(gen=st.gen + 1, cap=cap, held=max(cap, old.held if old else 0), sent_at=now,
                         boot=_boot_after_send(old))
            st = replace(st, gen=new.gen)
        states[sid] = replace(st, holders={**st.holders, node: new})
        leases[sid] = (node, new.gen, cap)
    after = sum(charge_of(states.get(sid), s.used) for sid, s in subs.items()) + \
        sum(st.charge() for sid, st in states.items() if sid not in subs)
    return TenantPlan(states, leases, after, unmet)


def _boot_after_send(old: Holder | None) -> str | None:
    if old is None:
        return None
    return UNKNOWN if old.boot is None else old.boot      # an earlier send was never answered


def levels(total: int, lo: Mapping[str, int], want: Mapping[str, int],
           prefer: Mapping[str, int] | None = None) -> dict[str, int]:
    """Max-min fair targets: clamp(L, lo, want) for the highest water level L whose sum fits `total`
    (never below lo, even when the lows alone exceed it). What rounding leaves goes one each, first to
    the highest `prefer` (the current caps: a cap that has the extra unit keeps it), then in key order."""
    def filled(level: int) -> int:
        return sum(min(max(level, lo[k]), want[k]) for k in lo)
    low, high = 0, max(want.values(), default=0)
    while low < high:
        mid = (low + high + 1) // 2
        if filled(mid) <= total:
            low = mid
        else:
            high = mid - 1
    out = {k: min(max(low, lo[k]), want[k]) for k in lo}
    left = total - sum(out.values())
    for k in sorted(lo, key=lambda k: (-(prefer or {}).get(k, 0), k)):
        if left <= 0:
            break
        if out[k] < want[k]:
            out[k] += 1
            left -= 1
    return out


def _share(caps: dict[str, int], floors: dict[str, int], subs: Mapping[str, Sub], charges: Mapping[str, int],
           dynamics: Mapping[str, Dynamics], share: int, budget: int, p: Params) -> tuple[dict[str, int], int]:
    """Caps of the running subscriptions. Each wants its count plus a slice (an idle one: its count).
    When the wants, or the caps, do not fit `share` (the quota minus the others' charges), the fair
    water level bounds them: caps above it come down (never below the counts; an idle one to its
    count), so a late or a slow one gets its share back. Caps go up towards what they want, within
    the level, paid from `budget` (quota - sum of charges), fairly when it is short."""
    want, keep, idle_at_cap = {}, {}, []
    for sid, cap in caps.items():
        s, d = subs[sid], dynamics.get(sid)
        if d is not None and d.stalls >= p.idle_after:
            want[sid] = keep[sid] = floors[sid]       # caught up with headroom: it asks for nothing
            if cap <= floors[sid]:
                idle_at_cap.append(sid)
            continue
        w = s.used + slice_for(d, p)
        if s.quota is not None:
            w = min(w, s.quota)
        want[sid] = max(floors[sid], w)
        keep[sid] = max(want[sid], cap)               # a busy one is not cut below what it holds...
    tight = sum(keep.values()) > share
    # ...unless that is above the fair level; with room for everyone, nothing is cut
    level = levels(share, floors, keep, caps) if tight else {sid: max(keep[sid], caps[sid]) for sid in caps}
    out, costs = {}, {}
    for sid, cap in caps.items():
        if level[sid] < cap:
            out[sid] = max(floors[sid], level[sid])
            continue
        target = min(level[sid], want[sid])
        out[sid] = max(cap, min(target, charges[sid]))      # up to its own charge costs nothing
        costs[sid] = max(0, target - out[sid])
    granted = waterfill(budget, costs)
    for sid, extra in granted.items():
        out[sid] += extra
    unmet = sum(costs.values()) - sum(granted.values())
    if not tight and unmet == 0:
        # budget nobody else wants: a small probe for idle ones left without headroom, so that one
        # whose page grew again can show it (its count grows and it is not idle any more)
        left = budget - sum(granted.values())
        for sid, extra in waterfill(left, {sid: p.min_slice for sid in idle_at_cap}).items():
            out[sid] += extra
    return out, unmet + max(0, sum(want.values()) - share)


def observe(state: SubLease, node: str, answered: bool, sent_now: bool, report: Reported | None,
            now: float, p: Params, boot: str | None = None) -> SubLease:
    """What a poll of `node` (which holds this subscription) tells about it. `sent_now`: this poll
    carried the subscription's lease; `report`: the node's entry for it (None: not on the node);
    `boot`: the answering process."""
    holder = state.holders.get(node)
    if holder is None or not answered:
        if holder is not None and sent_now:
            holder = replace(holder, acked=False, boot=UNKNOWN if holder.boot is None else holder.boot)
            state = replace(state, holders={**state.holders, node: holder})
        return state
    acked = sent_now or holder.acked
    if holder.boot is not None and boot != holder.boot:
        # another process: its count says nothing of what the previous one delivered. That one is
        # gone (restart or detach); what it may have spent stays charged until a synced report under
        # a newer generation (sent next tick, as this holder is no longer confirmed) reveals it.
        state = _fold(state, holder)
        holder = replace(holder, confirmed=False, acked=acked, boot=boot)
        return replace(state, holders={**state.holders, node: holder})
    holder = replace(holder, acked=acked, boot=boot)
    if report is None:
        # Not on the node. Every lease we sent there was processed (answered) or is older than the
        # margin, and the node refuses any generation it saw for an absent subscriber: released.
        if acked or now >= holder.sent_at + p.margin_s:
            return _without(replace(state, holders={**state.holders, node: holder}), node)
        return replace(state, holders={**state.holders, node: holder})
    if report.lease_gen == holder.gen:
        # the node applies the newest generation sent to it; an older one never applies again, and
        # its count (which never goes back) holds what this process delivered under older ones
        holder = replace(holder, confirmed=True, held=holder.cap)
    else:
        holder = replace(holder, confirmed=False)
    return replace(state, holders={**state.holders, node: holder})


def note_count(state: SubLease, report: Reported) -> SubLease:
    """Any node's report of the subscription: remember its count; a synced report from a lease issued
    after the floor was set shows the real count, which ends the floor."""
    state = replace(state, seen=max(state.seen, report.count))
    if state.floor and report.synced and report.lease_gen is not None and report.lease_cap is not None \
            and report.lease_gen >= state.floor_gen:
        effective = report.lease_cap if report.quota is None else min(report.quota, report.lease_cap)
        if report.count < effective or effective >= state.floor:
            state = replace(state, floor=0, floor_gen=0)
    return state


def track(d: Dynamics | None, report: Reported, now: float, p: Params) -> Dynamics:
    """Update the consumption rate from the holder's report. A subscription that hit its cap wanted
    more than it got: its rate doubles (at least a minimum slice per horizon). One that stopped
    growing with headroom is idle, and stays idle (even at a cap lowered to its count) until it grows."""
    if d is None or d.sample is None:
        return Dynamics(sample=(report.count, now))
    count0, at0 = d.sample
    dt = now - at0
    if dt <= 0:
        return d
    if report.count == count0 and d.stalls >= p.idle_after:
        return Dynamics(rate=0.0, sample=(report.count, now), stalls=d.stalls)
    observed = max(0, report.count - count0) / dt
    cap = report.lease_cap if report.quota is None or report.lease_cap is None else \
        min(report.quota, report.lease_cap)
    saturated = cap is not None and report.count >= cap
    if saturated:
        rate = max(observed, 2 * (d.rate or 0.0), p.min_slice / p.horizon_s)
    else:
        rate = observed if d.rate is None else (d.rate + observed) / 2
    still = report.count == count0 and not saturated and report.running and report.synced and report.caught_up
    return Dynamics(rate=min(rate, p.max_slice / p.horizon_s), sample=(report.count, now),
                    stalls=min(d.stalls + 1, p.idle_after) if still else 0)
