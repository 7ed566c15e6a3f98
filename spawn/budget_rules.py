"""Decisions of the spawn's upstream budget (one wiki identity's share on this node). Pure: the
shell (spawn.upstream_budget) passes the clock readings in and applies the answers.

Windows are in hub wall-clock time and read on this node's wall clock through shared.hub_clock;
pauses and slow-response waits are on the same wall clock.
"""
import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from shared import hub_clock
from shared.wire import Budget, Window

FRESH, BACKFILL = "fresh", "backfill"
# a wiki's change feed read: first in line on its node, since one read finds the work of the whole cluster,
# but reported to the hub as backfill demand, so that it never makes another node give its slot back
FEED = "feed"
# freshness goes first, but never for good: after this many freshness-lane requests in a row while backfill waited,
# the next goes to backfill. A wiki whose watched pages change all the time still catches up, bootstraps and
# backfills, at a fifth of the node's share of the identity at least.
FRESH_RUN = 4
# a request needs at least this long before its window closes, or it waits for the next window:
# one cut short at once would only be aborted and sent again
MIN_REQUEST_S = 0.5
# a window counts as covering a deadline when it is still open this long before it
EDGE_S = 0.01


@dataclass(frozen=True)
class Gate:
    """The answer to "may one more request start now?". Granted: `deadline` is the local wall time
    by which it must have ended. Refused: `wait_s` until it is worth asking again (inf: nothing
    opens without a new Budget) and why."""
    granted: bool
    deadline: float | None = None
    slots: int = 0
    wait_s: float = math.inf
    reason: str | None = None


@dataclass(frozen=True)
class Local:
    """What this node knows besides the Budget: its own pause (429, Retry-After, maxlag), the
    wiki's refusal of the credentials, requests in flight, the slots still cooling after a slow
    response (their ends, local wall time) and the last request start."""
    paused_until: float | None = None
    auth_error: str | None = None
    in_flight: int = 0
    cooling: tuple[float, ...] = ()
    last_start: float | None = None


def held_until(windows: Sequence[Window], index: int, skew: float) -> float:
    """Local wall time the slots of windows[index] last: through windows that follow it without a
    gap and hold at least as many slots (a renewal planned as a separate window)."""
    end = windows[index].end
    for nxt in windows[index + 1:]:
        if nxt.start > end or nxt.slots < windows[index].slots:
            break
        end = nxt.end
    return end - skew


def extended(budget: Budget | None, deadline: float, skew: float) -> float:
    """Where a request granted until local time `deadline` must end now: later when a renewal of the
    hold it runs under has arrived since it started (the hub plans renewals two polls ahead, so a
    request's first deadline is often close), else `deadline` itself."""
    if budget is None:
        return deadline
    ends = [held_until(budget.windows, i, skew) for i, w in enumerate(budget.windows)
            if hub_clock.is_open(w.start, w.end, deadline - EDGE_S, skew)]
    return max([deadline, *ends])


def gate(budget: Budget | None, local: Local, now: float, skew: float, identity: str) -> Gate:
    """Whether one more request of `identity` may start at local wall time `now`."""
    if local.auth_error is not None:
        return Gate(False, reason=f"the wiki refused the credentials of {identity}: {local.auth_error}")
    if budget is None:
        return Gate(False, reason=f"waiting for the upstream budget of {identity}")
    pauses = [p for p in (local.paused_until,
                          None if budget.paused_until is None else budget.paused_until + skew) if p is not None]
    if pauses and now < max(pauses):
        return Gate(False, wait_s=max(pauses) - now, reason=f"{identity} paused for {max(pauses) - now:.1f} s")
    for i, w in enumerate(budget.windows):
        if not hub_clock.is_open(w.start, w.end, now, skew):
            continue
        deadline = held_until(budget.windows, i, skew)
        if deadline - now < MIN_REQUEST_S:
            continue
        busy = local.in_flight + sum(1 for c in local.cooling if c > now)
        if busy >= w.slots:
            cooled = [c - now for c in local.cooling if c > now]
            # a request ending releases its slot and wakes the waiters; a cooling one only by time
            return Gate(False, wait_s=min(cooled) if cooled and local.in_flight == 0 else math.inf,
                        reason=f"all {w.slots} slot(s) of {identity} busy")
        spacing = 1.0 / w.rate_per_s
        if local.last_start is not None and now < local.last_start + spacing:
            return Gate(False, wait_s=local.last_start + spacing - now, reason=f"{identity} at its request rate")
        return Gate(True, deadline=deadline, slots=w.slots)
    opens = [hub_clock.until_open(w.start, w.end, now, skew) for w in budget.windows
             if not hub_clock.is_open(w.start, w.end, now, skew)]
    wait = min(opens, default=math.inf)
    return Gate(False, wait_s=wait, reason=f"waiting for the next upstream window of {identity}"
                if wait < math.inf else f"waiting for the upstream budget of {identity}")


def may_release(budget: Budget | None, local: Local, now: float, skew: float, *, waiting: bool,
                idle_s: float) -> bool:
    """Whether this node gives its windows back now: it holds a window that is open or still to come, and
    nobody waits, nothing is in flight and no request started for `idle_s`. Until a newer Budget it starts
    no request under them; the hub cuts its holds when it reads that and hands the slot time on."""
    if budget is None or waiting or local.in_flight > 0:
        return False
    if local.last_start is not None and now - local.last_start < idle_s:
        return False
    return any(now < w.end + skew for w in budget.windows)


@dataclass(frozen=True)
class Ticket:
    """A source waiting for a request slot: its lane, its tenants, and its place in line."""
    seq: int
    lane: str
    tenants: tuple[str, ...]


def tenant_weight(weights: Mapping[str, float], tenant: str) -> float:
    # a tenant the hub sent no weight for counts as 1; weight 0 is served only when nobody else waits
    return max(weights.get(tenant, 1.0), 1e-6)


def pick(waiting: Iterable[Ticket], served: Mapping[str, float], weights: Mapping[str, float],
         passed_over: int = 0) -> Ticket | None:
    """Who gets the next slot: a feed read, else the longest-waiting freshness-lane source (unless backfill waits
    and `passed_over`, the freshness requests started in a row while it waited, reached FRESH_RUN), else the
    backfill source whose least-served tenant has the lowest service per weight (weighted fair queueing; a
    source shared by several tenants stands in line for each), oldest first among equals."""
    tickets = list(waiting)
    feed = [t for t in tickets if t.lane == FEED]
    if feed:
        return min(feed, key=lambda t: t.seq)
    fresh = [t for t in tickets if t.lane == FRESH]
    tickets = [t for t in tickets if t.lane == BACKFILL]
    if fresh and (not tickets or passed_over < FRESH_RUN):
        return min(fresh, key=lambda t: t.seq)
    if not tickets:
        return None

    def virtual(t: Ticket) -> float:
        return min((served.get(x, 0.0) / tenant_weight(weights, x) for x in t.tenants), default=0.0)
    return min(tickets, key=lambda t: (virtual(t), t.seq))


def passed_over(before: int, started: Ticket, waiting: Iterable[Ticket]) -> int:
    """pick()'s `passed_over` after `started` started while `waiting` still wait: one more for a freshness
    request that went before backfill, 0 once backfill starts or none waits (a feed read changes nothing)."""
    if started.lane == FEED:
        return before
    if started.lane == FRESH and any(t.lane == BACKFILL for t in waiting):
        return before + 1
    return 0


def charge(served: Mapping[str, float], ticket: Ticket, sign: float = 1.0) -> dict[str, float]:
    """Service after one backfill request of `ticket` (sign -1: the request left the cycle's count): its
    tenants share the request's cost. A tenant whose count reaches zero is left out."""
    out = dict(served)
    if ticket.lane == BACKFILL and ticket.tenants:
        for x in ticket.tenants:
            out[x] = out.get(x, 0.0) + sign / len(ticket.tenants)
            if out[x] < 1e-9:
                del out[x]
    return out


def cluster_served(others: Mapping[str, float], own: Mapping[str, float]) -> dict[str, float]:
    """Backfill requests per tenant over the cycle on every node: the other nodes' as the hub last
    heard them, this node's as it counts them now. Serving the least of these per weight makes the
    node's queue part of one queue across the deployment."""
    return {t: others.get(t, 0.0) + own.get(t, 0.0) for t in {*others, *own}}


def demand(tickets: Iterable[Ticket]) -> tuple[dict[str, int], dict[str, int]]:
    """(fresh, backfill): sources per tenant in each lane (a shared source counts for each tenant; a feed
    read counts as backfill)."""
    lanes: dict[str, dict[str, int]] = {FRESH: {}, BACKFILL: {}}
    for t in tickets:
        lane = lanes[FRESH if t.lane == FRESH else BACKFILL]
        for x in t.tenants:
            lane[x] = lane.get(x, 0) + 1
    return lanes[FRESH], lanes[BACKFILL]


def drains(ticket: Ticket, asked_seq: int | None) -> bool:
    """Whether `ticket` may still start while the hub asks for this node's slots back (`asked_seq`: the
    first ticket number after the ask arrived; None: not asked). A holder serves the feed reads and the
    freshness-lane requests that waited before the ask, and no backfill: so a freshness holder hands the
    slot on within one round of its queue, one that keeps getting new pages cannot keep it, and a feed
    reader whose node is asked at every turn still reads at every turn."""
    return asked_seq is None or (ticket.lane in (FEED, FRESH) and ticket.seq < asked_seq)
