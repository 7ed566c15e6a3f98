"""The upstream budget of each wiki identity on this node: the shell around spawn.budget_rules.

Every request of an identity-paced subscription takes a slot here: only inside a window of the
newest Budget, at most `slots` in flight and `rate_per_s` starts per second, with a deadline at
the window's end. Waiting sources are served freshness lane first, then backfill by weighted fair
queueing over the Budget's tenant weights, counting every node's backfill requests of the last cycle.
Clock injected (wall clock: windows are hub epoch time).
"""
import itertools
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Mapping

from shared.wire import DEFAULT_BUDGET_CYCLE_S, Budget, IdentityUse
from spawn import budget_rules as rules
from spawn.budget_rules import BACKFILL, FEED, FRESH
from spawn.host_limiter import Cancelled

__all__ = ["BACKFILL", "FEED", "FRESH", "Demand", "IdentityBudget", "Permit", "UpstreamBudgets"]

MAX_WAIT_S = 0.5        # waiters look at their cancel event at least this often
# a node idle this long, with nobody waiting, gives its windows back in its next report: a source between
# two requests (writing what it fetched) asks again well within it
RELEASE_IDLE_S = 1.0


@dataclass(frozen=True)
class Demand:
    """Who asks for a request slot: the source's lane and the tenants it serves."""
    lane: str = rules.FRESH
    tenants: tuple[str, ...] = ()


@dataclass(frozen=True)
class Permit:
    """One granted request: it must have ended by `deadline` (local wall clock)."""
    deadline: float
    maxlag: int
    started: float
    seq: int = -1


class IdentityBudget:
    """One identity on this node. Thread-safe."""

    def __init__(self, identity: str, *, skew_s: float, clock: Callable[[], float] = time.time):
        self.identity = identity
        self.skew_s = skew_s
        self._clock = clock
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self.budget: Budget | None = None
        self._local = rules.Local()
        self._auth_gen = 0                   # Budget gen the credentials were refused under
        self.pause_reason: str | None = None
        self._waiting: dict[int, rules.Ticket] = {}
        self._in_flight: dict[int, rules.Ticket] = {}    # by seq: a source with a request out wants the slot too
        self._starts: deque[tuple[float, rules.Ticket]] = deque()    # backfill starts within the cycle
        self._served: dict[str, float] = {}                # their cost per tenant
        self._passed_over = 0                               # freshness starts in a row while backfill waited
        self.requests = 0
        self.throttled = 0
        self.busy_s = 0.0
        self._login_waiting: dict[int, rules.Ticket] = {}    # sources waiting for this node's turn to log in
        self._budget_waiting: dict[int, rules.Ticket] = {}   # sources waiting for a first Budget
        self._released_gen: int | None = None                # windows given back up to this Budget gen
        self._asked_gen: int | None = None                   # the hub asked for them back up to this gen
        self._asked_seq: int | None = None                   # first ticket after that ask: see rules.drains
        self._following = 0                                  # feed readers of this identity running here

    # -- from the hub ------------------------------------------------------------------------
    def apply(self, budget: Budget) -> bool:
        """Take a Budget from a poll: an equal or higher gen replaces it (a renewal may only move
        `end`), an older one is refused (False). A higher gen lifts a refusal of the credentials."""
        with self._cond:
            if self.budget is not None and budget.gen < self.budget.gen:
                return False
            if self._local.auth_error is not None and budget.gen > self._auth_gen:
                self._set(auth_error=None)
            # gave back what it was asked for: an ask that comes with a later Budget is a new turn's, and the
            # node serves what waits now (else a node granted and asked at every turn would never serve a
            # request that arrived after its first ask)
            answered = self._asked_gen is not None and (self._released_gen or 0) >= self._asked_gen
            if self._released_gen is not None and budget.gen > self._released_gen:
                self._released_gen = None
            if budget.give_back:
                if self._asked_gen is None or (answered and budget.gen > self._asked_gen):
                    self._asked_seq = next(self._seq)
                self._asked_gen = budget.gen
            elif self._asked_gen is not None and budget.gen > self._asked_gen:
                self._asked_gen = self._asked_seq = None
            self.budget = budget
            self._cond.notify_all()
            return True

    @property
    def gen(self) -> int | None:
        return None if self.budget is None else self.budget.gen

    # -- from the wiki -------------------------------------------------------------------------
    def pause(self, seconds: float, reason: str, *, throttled: bool = False) -> None:
        """429, Retry-After or maxlag seen here: no request of this identity on this node for
        `seconds`; reported to the hub, which pauses the other nodes."""
        with self._cond:
            until = self._clock() + seconds
            if self._local.paused_until is None or until > self._local.paused_until:
                self._set(paused_until=until)
                self.pause_reason = reason
            self.throttled += int(throttled)

    def refuse_credentials(self, reason: str) -> None:
        """The wiki refused the credentials: nothing more is asked until a new Budget gen."""
        with self._cond:
            self._auth_gen = self.gen or 0
            self._set(auth_error=reason)
            self._cond.notify_all()

    @property
    def auth_error(self) -> str | None:
        return self._local.auth_error

    # -- before the first request: a budget, and a session when the credential needs one ----------
    def wait_budget(self, demand: Demand = Demand(), cancel: threading.Event | None = None,
                    on_wait: Callable[[str | None], None] | None = None) -> Budget:
        """The current Budget, once there is one: it names the credential requests must carry, so nothing
        (not even how to authenticate) is decided before it arrives. Raises Cancelled when `cancel` fires."""
        self._wait_until(lambda: self.budget is not None, self._budget_waiting, demand, cancel, on_wait,
                         f"waiting for the upstream budget of {self.identity}")
        assert self.budget is not None
        return self.budget

    @contextmanager
    def login_turn(self, demand: Demand = Demand(), cancel: threading.Event | None = None,
                   on_wait: Callable[[str | None], None] | None = None) -> Iterator[None]:
        """Wait until the hub's Budget lets this node log in (Budget.login), then log in inside the block: a
        login's first request has no session yet, so the wiki's edge meters it as the anonymous client, and
        nodes take turns (the hub picks one of those that report `needs_login`). This node reports
        `needs_login` until the block ends, so the turn passes on only once its login is over. Raises
        Cancelled when `cancel` fires."""
        ticket = rules.Ticket(next(self._seq), demand.lane, demand.tenants)
        with self._cond:
            self._login_waiting[ticket.seq] = ticket
        try:
            self._wait_until(lambda: self.budget is not None and self.budget.login, {}, demand, cancel, on_wait,
                             f"waiting for its turn to log in to {self.identity}")
            yield
        finally:
            with self._cond:
                del self._login_waiting[ticket.seq]

    def _wait_until(self, ready: Callable[[], bool], waiting: dict[int, rules.Ticket], demand: Demand,
                    cancel: threading.Event | None, on_wait: Callable[[str | None], None] | None,
                    reason: str) -> None:
        """Wait for `ready`, counted in `waiting` meanwhile (it is demand the hub must see)."""
        told = False
        with self._cond:
            ticket = rules.Ticket(next(self._seq), demand.lane, demand.tenants)
            waiting[ticket.seq] = ticket
            try:
                while not ready():
                    if cancel is not None and cancel.is_set():
                        raise Cancelled()
                    if on_wait is not None and not told:
                        told = True
                        on_wait(reason)
                    self._cond.wait(MAX_WAIT_S)
            finally:
                del waiting[ticket.seq]
        if told and on_wait is not None:
            on_wait(None)

    # -- requests -----------------------------------------------------------------------------
    @contextmanager
    def slot(self, demand: Demand = Demand(), cancel: threading.Event | None = None,
             on_wait: Callable[[str | None], None] | None = None) -> Iterator[Permit]:
        """Wait for a request slot (raises Cancelled when `cancel` fires). `on_wait(reason)` is told
        once when the caller has to wait, and on_wait(None) when it is served after all."""
        permit = self._acquire(demand, cancel, on_wait)
        try:
            yield permit
        finally:
            self._release(permit)

    def _acquire(self, demand: Demand, cancel: threading.Event | None,
                 on_wait: Callable[[str | None], None] | None) -> Permit:
        told: str | None = None
        with self._cond:
            ticket = rules.Ticket(next(self._seq), demand.lane, demand.tenants)
            self._waiting[ticket.seq] = ticket
            try:
                while True:
                    if cancel is not None and cancel.is_set():
                        raise Cancelled()
                    now = self._clock()
                    gate = rules.gate(self._usable(ticket), self._local, now, self.skew_s, self.identity)
                    if gate.granted and rules.pick(self._eligible(), self._cluster_served(now),
                                                   self.budget.weights if self.budget else {},
                                                   self._passed_over) is ticket:
                        break
                    reason = gate.reason or f"queued for a slot of {self.identity}"
                    if self.pause_reason and self._local.paused_until is not None and self._local.paused_until > now:
                        reason = f"{reason} after {self.pause_reason}"        # why: the wiki's own words
                    if on_wait is not None and told is None and not gate.granted:
                        told = reason
                        on_wait(reason)
                    self._cond.wait(min(gate.wait_s, MAX_WAIT_S) if not gate.granted else MAX_WAIT_S)
            finally:
                del self._waiting[ticket.seq]
            self._passed_over = rules.passed_over(self._passed_over, ticket, self._eligible())
            self._served = rules.charge(self._served, ticket)
            if ticket.lane == BACKFILL:
                self._starts.append((now, ticket))
            self._in_flight[ticket.seq] = ticket
            self._set(in_flight=self._local.in_flight + 1, last_start=now,
                      cooling=tuple(c for c in self._local.cooling if c > now))
            self.requests += 1
            self._cond.notify_all()
        if told is not None and on_wait is not None:
            on_wait(None)
        return Permit(deadline=gate.deadline or now, maxlag=self.budget.maxlag if self.budget else 5, started=now,
                      seq=ticket.seq)

    def _cluster_served(self, now: float) -> dict[str, float]:
        """Backfill requests per tenant over the last cycle, here and (as last reported) elsewhere."""
        cycle = self.budget.cycle_s if self.budget else DEFAULT_BUDGET_CYCLE_S
        while self._starts and self._starts[0][0] <= now - cycle:
            self._served = rules.charge(self._served, self._starts.popleft()[1], -1.0)
        return rules.cluster_served(self.budget.served if self.budget else {}, self._served)

    def _release(self, permit: Permit) -> None:
        with self._cond:
            now = self._clock()
            elapsed = max(0.0, now - permit.started)
            self.busy_s += elapsed
            cooling = self._local.cooling
            if self.budget is not None and elapsed > self.budget.slow_after_s:
                # a slow answer: this slot stays taken for slow_wait_s more (the robot policy's rule)
                cooling = cooling + (now + self.budget.slow_wait_s,)
            self._in_flight.pop(permit.seq, None)
            self._set(in_flight=self._local.in_flight - 1, cooling=cooling)
            self._cond.notify_all()

    def extended(self, deadline: float) -> float:
        """Where a request granted until local time `deadline` must end, given the Budget now."""
        with self._cond:
            return rules.extended(self._usable(), deadline, self.skew_s)

    def _usable(self, ticket: rules.Ticket | None = None) -> Budget | None:
        """The Budget `ticket` may start under: its windows are gone once given back, and once asked for
        unless the ticket may still drain (rules.drains)."""
        budget = self.budget
        if budget is None:
            return None
        if budget.gen <= (self._released_gen or 0):
            return replace(budget, windows=())
        if budget.gen <= (self._asked_gen or 0) and (ticket is None or not rules.drains(ticket, self._asked_seq)):
            return replace(budget, windows=())
        return budget

    def _eligible(self) -> list[rules.Ticket]:
        """The waiting tickets that may start under the Budget as it stands (all of them unless asked)."""
        budget = self.budget
        asked = budget is not None and budget.gen <= (self._asked_gen or 0)
        return [t for t in self._waiting.values() if not asked or rules.drains(t, self._asked_seq)]

    @contextmanager
    def following(self) -> Iterator[None]:
        """While a feed reader of this identity runs here: between its reads the node keeps its windows
        instead of giving them back idle, and says so to the hub (IdentityUse.following), which then
        extends its holds only while no other node wants the slot and asks for it back when one does."""
        with self._cond:
            self._following += 1
        try:
            yield
        finally:
            with self._cond:
                self._following -= 1

    def _set(self, **changes) -> None:
        self._local = rules.Local(**{**self._local.__dict__, **changes})

    # -- to the hub ----------------------------------------------------------------------------
    def use(self) -> IdentityUse:
        with self._cond:
            # a source waiting to log in wants requests too: the hub gives the turn to a node with demand
            fresh, backfill = rules.demand([*self._waiting.values(), *self._in_flight.values(),
                                            *self._login_waiting.values(), *self._budget_waiting.values()])
            now = self._clock()
            self._cluster_served(now)           # drops the starts that left the cycle
            waiting = bool(self._waiting or self._login_waiting or self._budget_waiting or self._following)
            if rules.may_release(self.budget, self._local, now, self.skew_s, waiting=waiting, idle_s=RELEASE_IDLE_S):
                assert self.budget is not None
                self._released_gen = self.budget.gen
            if self._asked_gen is not None and self._local.in_flight == 0 and not self._eligible():
                # asked to give back: the freshness requests that waited then are served, the last has ended
                self._released_gen = max(self._released_gen or 0, self._asked_gen)
            paused = self._local.paused_until
            live = paused is not None and paused > now
            return IdentityUse(gen=self.gen, fresh=fresh, backfill=backfill, requests=self.requests,
                               throttled=self.throttled, busy_s=round(self.busy_s, 3),
                               paused_until=paused if live else None,
                               pause_reason=self.pause_reason if live else None,
                               auth_error=self._local.auth_error, needs_login=bool(self._login_waiting),
                               released_gen=self._released_gen, following=self._following > 0,
                               served={t: round(n, 3) for t, n in self._served.items()})


class UpstreamBudgets:
    """Every identity this node has heard of, by identity id. Thread-safe."""

    def __init__(self, *, skew_s: float, clock: Callable[[], float] = time.time):
        self.skew_s = skew_s
        self._clock = clock
        self._identities: dict[str, IdentityBudget] = {}
        self._lock = threading.Lock()

    def identity(self, identity: str) -> IdentityBudget:
        with self._lock:
            if identity not in self._identities:
                self._identities[identity] = IdentityBudget(identity, skew_s=self.skew_s, clock=self._clock)
            return self._identities[identity]

    def apply(self, budgets: Mapping[str, Budget]) -> None:
        for identity, budget in budgets.items():
            self.identity(identity).apply(budget)

    def report(self) -> dict[str, IdentityUse]:
        with self._lock:
            identities = list(self._identities.items())
        return {key: ib.use() for key, ib in identities}
