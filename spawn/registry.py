"""Registry: subscribers by id, data sources by source uuid. Thread-safe; every call is idempotent.

A source is created with its first subscriber and stopped with its last. Sending the same spec
again changes nothing; a changed quota or content flag updates the subscriber in place and never
restarts its source. Subscribers the hub stops naming in its polls are dropped as orphans.
Quota leases from polls go to their subscribers; a lease generation a removed subscriber had, or one
that arrived for an absent subscriber, is refused for good, and a leased subscriber created again
starts from the count it had (the hub counts on both, docs/quotas.md).

Titles naming one page (a redirect and its target, spellings the wiki normalises alike) are one
article: once a source has resolved its title, its page key (shared.hashing.source_uuid of the
wiki's own title) is in each subscriber's status, and a source resolving to a page another source
here already fetches hands its subscribers over and stops. They catch up from the store as any
subscriber joining a running source does. A source whose page was moved announces it again under the new
title: the page is keyed by that title from then on (its subscribers report it), so subscriptions to the
old title and to the new one end on one fetcher.
"""
import bisect
import logging
import threading
import time
from typing import Callable, Iterable, Mapping

from shared import hub_clock
from shared.feed_wire import Nudge
from shared.hashing import source_uuid
from shared.wire import Lease, SubscriptionSpec, SubscriptionStatus
from spawn.source import DataSource
from spawn.subscriber import Subscriber, same_source

logger = logging.getLogger(__name__)

# (spec, on_limit) -> an unstarted DataSource
SourceFactory = Callable[[SubscriptionSpec, Callable[[Subscriber], None]], DataSource]


class Registry:
    def __init__(self, source_factory: SourceFactory, *, orphan_after_s: float, clock=time.monotonic,
                 wall_clock=time.time, clock_skew_s: float = 0.5):
        self._make_source = source_factory
        self.orphan_after_s = orphan_after_s
        self._clock = clock
        # quota leases carry a deadline in hub time, read on the wall clock within the allowed skew
        self._wall_clock = wall_clock
        self._skew_s = clock_skew_s
        self._subs: dict[str, Subscriber] = {}
        self._sorted: list[str] | None = None     # their ids in order, for report pages; None: to sort again
        self._sources: dict[str, DataSource] = {}
        self._merged: dict[str, str] = {}          # source uuid -> key of the source fetching its page
        self._by_page: dict[str, DataSource] = {}  # page key -> the source fetching that page
        self._page_keys: dict[str, str] = {}       # source key -> its page key, once resolved
        self._refused_gen: dict[str, int] = {}     # per subscription id: lease generations up to this are void
        self._past_count: dict[str, tuple[str, int]] = {}   # leased ones removed: (source uuid, delivered)
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
                sub = Subscriber(spec, seen_at=now, clock=self._clock)
                past = self._past_count.get(spec.id)
                if spec.leased and past is not None and past[0] == spec.source_uuid:
                    sub.delivered = past[1]      # a leased count never goes back within a process
                self._subs[spec.id] = sub
                self._sorted = None
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

    def touch(self, named: tuple[str, ...]) -> None:
        """A page of the hub's list named these: refresh their orphan timers (drops nothing)."""
        with self._lock:
            now = self._clock()
            for sub_id in set(named) & self._subs.keys():
                self._subs[sub_id].seen_at = now

    def apply_leases(self, leases: Mapping[str, Lease]) -> None:
        """Quota leases from a poll. A subscriber whose allowance grew is credited again from the
        stored history and its source woken."""
        with self._lock:
            for sub_id, lease in leases.items():
                sub = self._subs.get(sub_id)
                if sub is None:
                    self._refuse_locked(sub_id, lease.gen)
                    continue
                if lease.gen <= self._refused_gen.get(sub_id, 0):
                    continue
                ttl_s = hub_clock.lease_seconds(lease.ttl_s, lease.expires_at, self._wall_clock(), self._skew_s)
                if sub.offer_lease(lease.gen, lease.cap, ttl_s):
                    self._attach_locked(sub)

    def clear(self, join_timeout_s: float = 5.0) -> None:
        """Stop every source and forget every subscriber (detach, shutdown)."""
        with self._lock:
            sources = list(self._sources.values())
            self._sources.clear()
            self._merged.clear()
            self._by_page.clear()
            self._page_keys.clear()
            for sub in self._subs.values():
                self._forget_locked(sub)
            self._subs.clear()
            self._sorted = None
            for src in sources:
                src.stop()
        for src in sources:
            src.join(join_timeout_s)

    # -- views -----------------------------------------------------------------------------
    def snapshot(self) -> list[SubscriptionStatus]:
        with self._lock:
            return self._statuses(list(self._subs))

    def snapshot_page(self, after: str | None, limit: int) -> tuple[list[SubscriptionStatus], str | None]:
        """At most `limit` statuses with ids after `after`, in id order, and the last id when more follow."""
        with self._lock:
            if self._sorted is None:
                self._sorted = sorted(self._subs)
            start = 0 if after is None else bisect.bisect_right(self._sorted, after)
            ids = self._sorted[start:start + limit + 1]
            return self._statuses(ids[:limit]), ids[limit - 1] if len(ids) > limit else None

    def nudge(self, nudges: Iterable[Nudge]) -> int:
        """Pass the change feed's nudges to the sources of the pages they name (by page key: a title's own
        source, one merged into another, or the source that resolved to that page); a nudge without a key
        goes to every source of its wiki. Returns how many sources were nudged; a page this node no longer
        fetches is skipped (its next node reads from the resume point anyway)."""
        nudged = 0
        with self._lock:
            for n in nudges:
                if n.key is None:
                    targets = {id(s): s for sub in self._subs.values() if sub.spec.wiki == n.wiki
                               for s in (self._source_locked(sub.spec.source_uuid),) if s is not None}
                    found = list(targets.values())
                else:
                    src = self._source_locked(n.key)
                    found = [] if src is None else [src]
                for src in found:
                    src.nudge(n.kind, n.rev_ids, n.hide)
                nudged += len(found)
        return nudged

    def _statuses(self, ids: list[str]) -> list[SubscriptionStatus]:
        return [self._subs[i].status(caught_up=src is not None and src.complete,
                                     complete=None if src is None else src.proven,
                                     settled=None if src is None else src.settled)
                for i in ids for src in (self._source_locked(self._subs[i].spec.source_uuid),)]

    def counts(self) -> dict:
        with self._lock:
            return {"subscribers": len(self._subs), "sources": len(self._sources)}

    def source(self, source_uuid: str) -> DataSource | None:
        with self._lock:
            return self._source_locked(source_uuid)

    # -- internals -------------------------------------------------------------------------
    def _attach_locked(self, sub: Subscriber) -> None:
        if sub.spec.quota == 0:
            sub.credit(())         # nothing to fetch for it: no source needed
            return
        src = self._source_locked(sub.spec.source_uuid)
        if src is None:
            src = self._make_source(sub.spec, self._on_limit)
            src.on_resolved = lambda resolved, wiki=sub.spec.wiki: self._on_resolved(resolved, wiki)
            self._sources[sub.spec.source_uuid] = src
            src.attach(sub)
            if sub.spec.source_uuid in self._sources:   # not already released at quota 0
                src.start()
                logger.info("source.started", extra={"source": src.key, "title": sub.spec.title})
        else:
            sub.page_key = self._page_keys.get(src.key, sub.page_key)
            src.attach(sub)

    def _source_locked(self, uuid: str) -> DataSource | None:
        # a title of its own, merged into another title's source, or the page key of a resolved source
        return self._sources.get(self._merged.get(uuid, uuid)) or self._by_page.get(uuid)

    def _on_resolved(self, src: DataSource, wiki: str) -> None:
        """`src` resolved its title (called from its thread): note its page, or hand its subscribers
        to the source already fetching that page and stop it."""
        with self._lock:
            if self._sources.get(src.key) is not src:
                return          # stopped meanwhile
            assert src.page is not None, "called once the source resolved its page"
            key = str(source_uuid(wiki, src.page.title))
            old = self._page_keys.get(src.key)
            if old is not None and old != key and self._by_page.get(old) is src:
                del self._by_page[old]          # moved: the page goes by its new title
            into = self._by_page.get(key)
            if into is not None and into is not src:
                del self._sources[src.key]
                self._page_keys.pop(src.key, None)
                self._merged[src.key] = into.key
                src.stop()
                logger.info("source.merged", extra={"source": src.key, "into": into.key, "page_key": key,
                                                    "title": src.title})
            else:
                self._by_page[key] = into = src
                self._page_keys[src.key] = key
            for sub in src.subscribers():
                sub.page_key = key
                if into is not src:
                    src.detach(sub.id)
                    into.attach(sub)     # credited from the store, as any subscriber joining it

    def _refuse_locked(self, sub_id: str, gen: int) -> None:
        if gen:
            self._refused_gen[sub_id] = max(gen, self._refused_gen.get(sub_id, 0))

    def _forget_locked(self, sub: Subscriber) -> None:
        self._refuse_locked(sub.id, sub.lease_gen)
        if sub.spec.leased:
            self._past_count[sub.id] = (sub.spec.source_uuid, sub.delivered)

    def _remove_locked(self, sub_id: str) -> bool:
        sub = self._subs.pop(sub_id, None)
        self._sorted = None
        if sub is None:
            return False
        self._forget_locked(sub)
        src = self._source_locked(sub.spec.source_uuid)
        if src is not None and src.detach(sub_id) == 0:
            self._stop_source_locked(src)
        return True

    def _on_limit(self, sub: Subscriber) -> None:
        """A subscriber reached its quota and left its source (it stays listed as limit_reached)."""
        logger.info("subscriber.limit_reached", extra={"subscription": sub.id, "revisions": sub.delivered})
        with self._lock:
            src = self._source_locked(sub.spec.source_uuid)
            if src is not None and not src.subscribers():
                self._stop_source_locked(src)

    def _stop_source_locked(self, src: DataSource) -> None:
        self._sources.pop(src.key, None)
        key = self._page_keys.pop(src.key, None)
        if key is not None and self._by_page.get(key) is src:
            del self._by_page[key]
        for uuid in [u for u, into in self._merged.items() if into == src.key]:
            del self._merged[uuid]
        src.stop()
        logger.info("source.stopped", extra={"source": src.key})
