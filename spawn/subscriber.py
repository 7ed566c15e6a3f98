"""Subscriber: one subscription consuming a data source: its spec, quota and counters.

Semantics of "revisions delivered": a source stores its page's history once, oldest first; a
subscriber is delivered the page's stored revisions in that order, up to its quota. A subscriber
that joins a source with revisions already stored is credited with them at once (up to its
quota), so its count does not depend on who joined first, on restarts, or on the node it runs on:
delivered = min(quota, revisions of the page stored). The source never stores a revision that no
attached subscriber still wants. A subscriber asking for content on a history stored without it
makes the source fetch that range again with wikitext (rewritten, not delivered twice).
"""
import threading

from shared.wire import SubscriptionSpec, SubscriptionStatus


class Subscriber:
    def __init__(self, spec: SubscriptionSpec, *, seen_at: float):
        self.spec = spec
        self.state = "assigned"
        self.delivered = 0
        self.last_rev_id: int | None = None
        self.last_error: str | None = None
        self.seen_at = seen_at              # last time the hub named it (PUT or a Poll's assigned list)
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.spec.id

    def remaining(self) -> int | None:
        """Revisions still wanted; None = unlimited."""
        if self.spec.quota is None:
            return None
        return max(0, self.spec.quota - self.delivered)

    def at_limit(self) -> bool:
        return self.remaining() == 0

    def credit(self, stored_ids) -> None:
        """Set the counters from the page's stored revision ids (oldest first), capped by the quota."""
        with self._lock:
            n = len(stored_ids) if self.spec.quota is None else min(self.spec.quota, len(stored_ids))
            self.delivered = n
            self.last_rev_id = stored_ids[n - 1] if n else None
            self._settle_locked()

    def deliver(self, rev_ids: list[int]) -> int:
        """Take as many of these newly stored revisions (oldest first) as the quota allows."""
        with self._lock:
            rem = self.remaining()
            taken = rev_ids if rem is None else rev_ids[:rem]
            if taken:
                self.delivered += len(taken)
                self.last_rev_id = taken[-1]
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
            if error is not None:
                self.last_error = error

    def note_error(self, error: str) -> None:
        with self._lock:
            self.last_error = error

    def update(self, spec: SubscriptionSpec) -> None:
        """Change quota/content in place. The caller re-credits against the source afterwards."""
        with self._lock:
            self.spec = spec

    def status(self) -> SubscriptionStatus:
        with self._lock:
            return SubscriptionStatus(id=self.spec.id, state=self.state, revisions=self.delivered,
                                      last_rev_id=self.last_rev_id, last_error=self.last_error,
                                      spec=self.spec.to_dict())


def same_source(a: SubscriptionSpec, b: SubscriptionSpec) -> bool:
    return a.source_uuid == b.source_uuid and a.wiki == b.wiki and a.title == b.title

