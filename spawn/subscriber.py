"""Subscriber: one subscription consuming a data source: its spec, quota and counters.

Semantics of "revisions delivered": a source stores its page's history once, oldest first; a
subscriber is delivered the page's stored revisions in that order, up to its quota. A subscriber
that joins a source with revisions already stored is credited with them at once (up to its
quota), so its count does not depend on who joined first, on restarts, or on the node it runs on:
delivered = min(quota, revisions of the page stored). The source never stores a revision that no
attached subscriber still wants. A subscriber asking for content on a history stored without it
makes the source fetch that range again with wikitext (rewritten, not delivered twice).

A leased spec (its tenant has a quota, docs/quotas.md) is also capped by the quota lease the hub's
polls carry: without a valid lease it takes nothing more and shows `waiting` with the reason. A
lease is spent when the source decides what to write (deliver's allowance), never after it expired.
"""
import threading
import time
from dataclasses import dataclass

from shared.wire import LeaseStatus, SubscriptionSpec, SubscriptionStatus

_NOW = object()     # deliver(): compute the allowance at delivery time


@dataclass(frozen=True)
class _Lease:
    gen: int
    cap: int
    expires_at: float       # on this process's monotonic clock


class Subscriber:
    def __init__(self, spec: SubscriptionSpec, *, seen_at: float, clock=time.monotonic):
        self.spec = spec
        self.state = "assigned"
        self.delivered = 0
        self.last_rev_id: int | None = None
        self.last_error: str | None = None
        self.page_key: str | None = None    # set by the registry once its source resolved the title
        self.seen_at = seen_at              # last time the hub named it (PUT or a Poll's assigned list)
        self._clock = clock
        self._lease: _Lease | None = None
        self._synced_gen = 0                # lease generation its count was last checked against storage at
        # the lease in force when the source decided on a batch it is still writing (pledge .. settle)
        self._pledged: _Lease | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def lease_gen(self) -> int:
        lease = self._lease
        return 0 if lease is None else lease.gen

    def cap(self) -> int | None:
        """Most revisions it may have delivered right now; None = unlimited. A leased spec without a
        valid lease may keep what it has and take nothing more."""
        cap = self.spec.quota
        if self.spec.leased:
            lease = self._lease
            granted = self.delivered if lease is None or self._clock() >= lease.expires_at else lease.cap
            cap = granted if cap is None else min(cap, granted)
        return cap

    def remaining(self) -> int | None:
        """Revisions still wanted; None = unlimited."""
        cap = self.cap()
        return None if cap is None else max(0, cap - self.delivered)

    def at_limit(self) -> bool:
        """Its own quota is reached (a used-up lease only makes it wait)."""
        return self.spec.quota is not None and self.delivered >= self.spec.quota

    def offer_lease(self, gen: int, cap: int, ttl_s: float) -> bool | None:
        """Apply a lease from a poll: a newer generation replaces the lease, the same one renews it,
        an older one is refused (None). Returns whether it may now take more than before."""
        with self._lock:
            old = self._lease
            if old is not None and gen < old.gen:
                return None
            before = self.remaining()
            self._lease = _Lease(gen, cap if old is None or gen > old.gen else old.cap, self._clock() + ttl_s)
            after = self.remaining()
            return after is None or (before is not None and after > before)

    def pledge(self) -> int | None:
        """remaining() now, for a batch the source is about to write and deliver with deliver(ids, it).
        Until settle(), status() keeps showing the lease in force now: a lower cap arriving meanwhile must
        not be confirmed to the hub, which would then count on that cap while this batch may exceed it."""
        with self._lock:
            self._pledged = self._lease
            return self.remaining()

    def settle(self) -> None:
        """The pledged batch was delivered, or was not written at all."""
        with self._lock:
            self._pledged = None

    def mark_synced(self, gen: int) -> None:
        """Its count now includes every revision stored before the lease generation `gen` arrived."""
        with self._lock:
            self._synced_gen = max(self._synced_gen, gen)

    def credit(self, stored_ids) -> None:
        """Set the counters from the page's stored revision ids (oldest first), capped by the quota
        (and lease). A leased count never goes back: the hub's reservation relies on it."""
        with self._lock:
            cap = self.cap()
            n = len(stored_ids) if cap is None else min(cap, len(stored_ids))
            if self.spec.leased:
                n = min(max(n, self.delivered), len(stored_ids))
            self.delivered = n
            self.last_rev_id = stored_ids[n - 1] if n else None
            self._settle_locked()

    def deliver(self, rev_ids: list[int], allowance=_NOW) -> int:
        """Take as many of these newly stored revisions (oldest first) as the quota allows.
        `allowance`: remaining() as it was when the source decided to write them (None = unlimited)."""
        with self._lock:
            rem = self.remaining() if allowance is _NOW else allowance
            taken = rev_ids if rem is None else rev_ids[:rem]
            if taken:
                self.delivered += len(taken)
                self.last_rev_id = taken[-1]
                if self.state != "waiting":     # a source waiting for its next request keeps saying why
                    self.last_error = None      # progress: any earlier retry is over
            self._settle_locked()
            return len(taken)

    def _settle_locked(self) -> None:
        if self.at_limit():
            self.state = "limit_reached"
        elif self.state in ("assigned", "limit_reached"):
            self.state = "running"

    def set_state(self, state: str, error: str | None = None) -> None:
        with self._lock:
            if self.state == "limit_reached" and state != "failed":
                return
            self.state = state
            # last_error describes what is wrong now: a healthy pass clears an old one
            if error is not None or state == "running":
                self.last_error = error

    def note_error(self, error: str) -> None:
        with self._lock:
            self.last_error = error

    def update(self, spec: SubscriptionSpec) -> None:
        """Change quota/content in place. The caller re-credits against the source afterwards."""
        with self._lock:
            self.spec = spec

    def status(self, caught_up: bool = False, complete: bool | None = None,
               settled: bool | None = None) -> SubscriptionStatus:
        """`caught_up`: its source has the page's whole history (reported with a lease); `complete`: its
        source proved the stored history equal to the wiki's (spawn.completeness)."""
        with self._lock:
            state, error, lease = self.state, self.last_error, None
            if self.spec.leased:
                now = self._clock()
                held = self._lease
                pledged = self._pledged
                if held is not None and pledged is not None and pledged.gen != held.gen:
                    held = pledged          # not applied yet as far as the hub may count on it
                if held is not None:
                    lease = LeaseStatus(gen=held.gen, cap=held.cap, expires_in_s=round(held.expires_at - now, 3),
                                        synced=self._synced_gen >= held.gen, caught_up=caught_up)
                if state in ("assigned", "running", "waiting") and self.remaining() == 0 and not self.at_limit():
                    state, error = "waiting", _lease_wait_reason(held, now)
            return SubscriptionStatus(id=self.spec.id, state=state, revisions=self.delivered,
                                      last_rev_id=self.last_rev_id, last_error=error,
                                      spec=self.spec.to_dict(), lease=lease, page_key=self.page_key,
                                      complete=complete, settled=settled)


def _lease_wait_reason(lease: _Lease | None, now: float) -> str:
    if lease is None:
        return "waiting for a quota lease from the hub"
    if now >= lease.expires_at:
        return f"quota lease expired {now - lease.expires_at:.0f} s ago (no hub poll): waiting for a new one"
    return f"tenant quota lease used up ({lease.cap} revisions): waiting for the hub to lease more"


def same_source(a: SubscriptionSpec, b: SubscriptionSpec) -> bool:
    return a.source_uuid == b.source_uuid and a.wiki == b.wiki and a.title == b.title
