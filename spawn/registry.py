"""Registry: subscribers by id, data sources by source uuid. Thread-safe; every call is idempotent.

A source is created with its first subscriber and stopped with its last. Sending the same spec
again changes nothing; a changed quota or content flag updates the subscriber in place and never
restarts its source. Subscribers the hub stops naming in its polls are dropped as orphans.
"""
import logging
import threading
import time
from typing import Callable

from shared.wire import SubscriptionSpec, SubscriptionStatus
from spawn.source import DataSource
from spawn.subscriber import Subscriber, same_source

logger = logging.getLogger(__name__)

# (spec, on_limit) -> an unstarted DataSource
SourceFactory = Callable[[SubscriptionSpec, Callable[[Subscriber], None]], DataSource]


class Registry:
    def __init__(self, source_factory: SourceFactory, *, orphan_after_s: float, clock=time.monotonic):
        self._make_source = source_factory
        self.orphan_after_s = orphan_after_s
        self._clock = clock
        self._subs: dict[str, Subscriber] = {}
        self._sources: dict[str, DataSource] = {}
        # re-entrant: a source may report a subscriber at its limit from inside attach()
        self._lock = threading.RLock()

    # -- hub commands ----------------------------------------------------------------------
    def upsert(self, spec: SubscriptionSpec) -> tuple[SubscriptionStatus, bool]:
        """Run `spec`. Returns (status, changed); changed is False when it was already running as is."""
        with self._lock:
            now = self._clock()
            sub = self._subs.get(spec.id)
            if sub is not None and sub.spec == spec:
                sub.seen_at = now
                return sub.status(), False
            if sub is not None and not same_source(sub.spec, spec):
                self._remove_locked(spec.id)     # another article under the same id: a new subscriber
                sub = None
            if sub is None:
                sub = Subscriber(spec, seen_at=now)
                self._subs[spec.id] = sub
                logger.info("subscriber.added", extra={"subscription": spec.id, "title": spec.title})
            else:
                sub.update(spec)
                sub.seen_at = now
                logger.info("subscriber.updated", extra={"subscription": spec.id, "quota": spec.quota,
                                                         "content": spec.content})
            self._attach_locked(sub)
            return sub.status(), True

    def remove(self, sub_id: str) -> bool:
        """Drop a subscriber; unknown ids are fine (returns False)."""
        with self._lock:
            return self._remove_locked(sub_id)

    def poll(self, assigned: tuple[str, ...]) -> list[str]:
        """The hub named `assigned`: refresh their orphan timers, drop the long-unnamed. Returns dropped ids."""
        with self._lock:
            now = self._clock()
            named = set(assigned)
            for sub_id in named & self._subs.keys():
                self._subs[sub_id].seen_at = now
            orphans = [s.id for s in self._subs.values()
                       if s.id not in named and now - s.seen_at > self.orphan_after_s]
            for sub_id in orphans:
                logger.info("subscriber.orphaned", extra={"subscription": sub_id})
                self._remove_locked(sub_id)
            return orphans

    def clear(self, join_timeout_s: float = 5.0) -> None:
        """Stop every source and forget every subscriber (detach, shutdown)."""
        with self._lock:
            sources = list(self._sources.values())
            self._sources.clear()
            self._subs.clear()
            for src in sources:
                src.stop()
        for src in sources:
            src.join(join_timeout_s)

    # -- views -----------------------------------------------------------------------------
    def snapshot(self) -> list[SubscriptionStatus]:
        with self._lock:
            subs = list(self._subs.values())
        return [s.status() for s in subs]

    def counts(self) -> dict:
        with self._lock:
            return {"subscribers": len(self._subs), "sources": len(self._sources)}

    def source(self, source_uuid: str) -> DataSource | None:
        with self._lock:
            return self._sources.get(source_uuid)

    # -- internals -------------------------------------------------------------------------
    def _attach_locked(self, sub: Subscriber) -> None:
        if sub.spec.quota == 0:
            sub.credit(())         # nothing to fetch for it: no source needed
            return
        src = self._sources.get(sub.spec.source_uuid)
        if src is None:
            src = self._make_source(sub.spec, self._on_limit)
            self._sources[sub.spec.source_uuid] = src
            src.attach(sub)
            if sub.spec.source_uuid in self._sources:   # not already released at quota 0
                src.start()
                logger.info("source.started", extra={"source": src.key, "title": sub.spec.title})
        else:
            src.attach(sub)

    def _remove_locked(self, sub_id: str) -> bool:
        sub = self._subs.pop(sub_id, None)
        if sub is None:
            return False
        src = self._sources.get(sub.spec.source_uuid)
        if src is not None and src.detach(sub_id) == 0:
            self._stop_source_locked(src)
        return True

    def _on_limit(self, sub: Subscriber) -> None:
        """A subscriber reached its quota and left its source (it stays listed as limit_reached)."""
        logger.info("subscriber.limit_reached", extra={"subscription": sub.id, "revisions": sub.delivered})
        with self._lock:
            src = self._sources.get(sub.spec.source_uuid)
            if src is not None and not src.subscribers():
                self._stop_source_locked(src)

    def _stop_source_locked(self, src: DataSource) -> None:
        self._sources.pop(src.key, None)
        src.stop()
        logger.info("source.stopped", extra={"source": src.key})
