"""The node's attachment to the hub: registration (with backoff and jitter until the hub answers),
heartbeats, and detach on hub silence (stop every source, drop every job, register again).

Any authenticated call from the hub proves it is alive, so polls, PUTs and DELETEs all count as
heartbeats. boot_id changes on detach as on a restart: the node's jobs are gone either way.
"""
import logging
import threading
import time
import uuid
from typing import Sequence

from shared.budget_wire import BudgetRound, BudgetRoundAck
from shared.errors import Conflict
from shared.feed_wire import CHECK, Nudge
from shared.hashing import node_id_for
from shared.wire import Poll, RegistrationAck, ReportPage, StatusReport, SubscriptionSpec, SubscriptionStatus
from spawn import poll_rounds, report_delta
from spawn.catch_up import CatchUpReaders
from spawn.census_shards import ShardProvers
from spawn.category_members import MembersReaders
from spawn.dump_duties import DumpRunners
from spawn.feed_reader import FeedReaders, FollowedWikis
from spawn.health import Attachment, SpawnHealth, spawn_health
from spawn.host_limiter import Backoff
from spawn.hub_client import HubClient, HubError, HubRejected, HubUnreachable
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.upstream_budget import UpstreamBudgets
from spawn.watchdog import DetachWatchdog

logger = logging.getLogger(__name__)

# Most statuses one report carries, whatever the hub asks: with their specs about 1 KB each (3 KB at worst)
MAX_REPORT_ITEMS = 1000


def load_figure(counts: dict) -> int:
    """What autoscaling tracks: subscribers (status work) plus sources (fetch and write work)."""
    return counts["subscribers"] + counts["sources"]


class Node:
    def __init__(self, registry: Registry, hub: HubClient, *, advertise_url: str, detach_after_s: float,
                 metrics: SpawnMetrics | None = None, backoff: Backoff | None = None, clock=time.monotonic,
                 wait=None, budgets: UpstreamBudgets | None = None, feeds: FeedReaders | None = None,
                 followed: FollowedWikis | None = None, dumps: DumpRunners | None = None,
                 catch_up: CatchUpReaders | None = None, members: MembersReaders | None = None,
                 census: ShardProvers | None = None):
        self.registry = registry
        self.budgets = budgets          # upstream budgets per wiki identity (None: no identity pacing)
        self.feeds = feeds              # the change feeds this node reads for the cluster (None: none)
        self.followed = followed or FollowedWikis()
        self.dumps = dumps              # the dump files this node reads for the cluster (None: none)
        self.catch_up = catch_up        # the sets whose wiki this node reads on from their dump (None: none)
        self.members = members          # the category sets whose members this node lists (None: none)
        self.census = census            # the census shards this node proves (None: none)
        self.hub = hub
        self.advertise_url = advertise_url.rstrip("/")
        self.node_id = node_id_for(self.advertise_url)
        self.metrics = metrics or SpawnMetrics()
        self.backoff = backoff or Backoff(base_s=0.5, cap_s=30.0)
        self.boot_id = uuid.uuid4().hex
        self.attached = False
        self.detached = False                                 # since hub silence, until registered again
        self._last_assigned: tuple[str, ...] = ()            # what the hub's last complete list named
        # put since that list: the hub assigned them after it, so keepalives keep them named too (a tick that
        # places a million subscriptions outlasts the orphan timer before its next list arrives)
        self._put_since: set[str] = set()
        self._round = poll_rounds.Round()                     # the paged list being received
        self._answer: report_delta.Answer | None = None       # the latest tokened report, paged from
        self._reports = 0
        self._report_lock = threading.Lock()
        self._registration_failure: HubError | None = None    # the last attempt's, until one succeeds
        self.poll_interval_s: float | None = None
        self.watchdog = DetachWatchdog(detach_after_s, self.detach, clock=clock)
        self._stop = threading.Event()
        self._wait = wait or self._stop.wait       # backoff waits end early on shutdown
        self._need_register = threading.Event()
        self._need_register.set()
        self._threads: list[threading.Thread] = []

    # -- hub contact -----------------------------------------------------------------------
    def contact(self) -> None:
        self.watchdog.touch()
        if not self.attached:
            logger.info("node.attached", extra={"node_id": self.node_id})
        self.attached = True
        self.metrics.attached.set(1)

    def heartbeat(self, poll: Poll | None = None) -> StatusReport:
        self.contact()
        if poll is not None:
            if poll.node_id != self.node_id:
                logger.warning("node.poll_for_other_id", extra={"expected": self.node_id, "got": poll.node_id})
            self.registry.apply_leases(poll.leases)
            if self.budgets is not None:
                self.budgets.apply(poll.budgets)
            self.registry.touch(poll.assigned)
            if poll.report is None or poll.report.after is None:     # a poll's first request
                self._apply_feeds(poll)
                if self.dumps is not None:
                    self.dumps.apply(poll.dumps)
                if self.catch_up is not None:
                    self.catch_up.apply(poll.catch_up)
                if self.members is not None:
                    self.members.apply(poll.members)
                if self.census is not None:
                    self.census.apply(poll.census)
            if poll.changes:
                self._nudge(poll.changes)
            self._round, complete = poll_rounds.receive(self._round, poll.page, poll.assigned)
            if complete is not None:        # only a complete list may make an orphan
                self.registry.poll(complete)
                self._last_assigned = complete
                self._put_since = set()
        return self.report(poll.report if poll is not None else None)

    def nudge(self, changes: Sequence[Nudge]) -> int:
        """POST /v1/changes: the hub's nudges, sent in the tick that read them. Counts as hub contact."""
        self.contact()
        return self._nudge(changes)

    def budget_round(self, round_: BudgetRound) -> BudgetRoundAck:
        """POST /v1/budgets: Budgets the hub changed between polls (a slot handed over), applied as a poll's
        are, and this node's upstream use now (a slot it gave back). Counts as hub contact. Budgets meant for
        another node are refused: holding them could put more requests in flight than the wiki allows."""
        if round_.node_id != self.node_id:
            raise Conflict(f"this is node {self.node_id}, not {round_.node_id}", field="node_id")
        self.contact()
        if self.budgets is None:
            return BudgetRoundAck(self.node_id)
        self.budgets.apply(round_.budgets)
        return BudgetRoundAck(self.node_id, self.budgets.report())

    def _nudge(self, changes: Sequence[Nudge]) -> int:
        for nudge in changes:
            self.metrics.nudges.labels(kind=nudge.kind).inc()
        return self.registry.nudge(changes)

    def _apply_feeds(self, poll: Poll) -> None:
        """The feeds this node reads, and the wikis whose feed is followed: a wiki no longer followed has
        its pages checked by the revisit batcher again, from now."""
        if self.feeds is not None:
            self.feeds.apply(poll.feeds)
        dropped = self.followed.update(poll.followed)
        if dropped:
            self.registry.nudge([Nudge(wiki, CHECK) for wiki in sorted(dropped)])

    def keepalive(self) -> dict:
        """The hub is alive but between polls (a long tick): no detach, and what its last complete list named,
        or it put since, is still named (no orphan timer runs out because the hub is busy)."""
        self.contact()
        self.registry.poll(self._last_assigned + tuple(self._put_since))
        return {"node_id": self.node_id, "boot_id": self.boot_id, "attached": self.attached}

    def put(self, spec: SubscriptionSpec) -> tuple[SubscriptionStatus, bool]:
        self.contact()
        self._put_since.add(spec.id)
        return self.registry.upsert(spec)

    def delete(self, sub_id: str) -> bool:
        self.contact()
        self._put_since.discard(sub_id)
        return self.registry.remove(sub_id)

    # -- views -----------------------------------------------------------------------------
    def report(self, page: ReportPage | None = None) -> StatusReport:
        """Every subscription, or with `page` a page of a tokened report: everything, or what changed since
        the report the poll names (spawn.report_delta), in id order, and where the next page starts."""
        token, delta = None, False
        subs: Sequence[SubscriptionStatus]
        removed: tuple[str, ...] = ()
        if page is None:
            subs, after = self.registry.snapshot(), None
        else:
            limit = min(page.limit, MAX_REPORT_ITEMS)
            with self._report_lock:
                if page.after is None or self._answer is None:
                    self._reports += 1
                    self._answer = report_delta.answer(self._answer if page.after is None else None, page.since,
                                                       self.registry.snapshot(), f"{self.boot_id}.{self._reports}")
                issued = self._answer
            subs, after = report_delta.page(issued, page.after, limit)
            token, delta, removed = issued.token, issued.delta, issued.removed if page.after is None else ()
        counts = self.registry.counts()
        self.metrics.subscribers.set(counts["subscribers"])
        self.metrics.sources.set(counts["sources"])
        load = self._health(counts).load
        self.metrics.load.set(float("nan") if load is None else load)     # unknown outside the cluster, not 0
        first = page is None or page.after is None
        return StatusReport(node_id=self.node_id, boot_id=self.boot_id, attached=self.attached,
                            subscriptions=tuple(subs), sources=counts["sources"],
                            identities=self.budgets.report() if self.budgets is not None else {}, next=after,
                            token=token, delta=delta, removed=removed,
                            feeds=self.feeds.reports() if self.feeds is not None and first else {},
                            dumps=self.dumps.reports() if self.dumps is not None and first else {},
                            catch_up=self.catch_up.reports() if self.catch_up is not None and first else {},
                            members=self.members.reports() if self.members is not None and first else {},
                            census=self.census.reports() if self.census is not None and first else (),
                            clock=time.time())      # the wall clock the budget windows are read on

    def attachment(self) -> Attachment:
        failure = self._registration_failure
        return Attachment(registered=not self.registration_pending, attached=self.attached, detached=self.detached,
                          failed_status=failure.status if isinstance(failure, HubRejected) else None,
                          unreachable=isinstance(failure, HubUnreachable))

    def health(self) -> dict:
        """GET /health's body; `status` is "ok" only while registered and hearing from the hub."""
        counts = self.registry.counts()
        health = self._health(counts)
        body = {"status": "ok" if health.healthy else "unavailable", "node_id": self.node_id,
                "attached": self.attached, "state": health.state, **counts, "load": health.load}
        return body if health.reason is None else {**body, "reason": health.reason}

    def _health(self, counts: dict) -> SpawnHealth:
        return spawn_health(self.attachment(), load_figure(counts), self.watchdog.timeout_s)

    # -- detach and registration -------------------------------------------------------------
    def detach(self) -> None:
        logger.warning("node.detached", extra={"node_id": self.node_id,
                                               "after_s": self.watchdog.timeout_s})
        # sources first: once this node reports itself detached, nothing more is written
        self.registry.clear()
        if self.feeds is not None:
            self.feeds.stop()
        if self.dumps is not None:
            self.dumps.stop()
        if self.catch_up is not None:
            self.catch_up.stop()
        if self.members is not None:
            self.members.stop()
        if self.census is not None:
            self.census.stop()
        self.followed.update(())
        self.attached = False
        self.metrics.attached.set(0)
        self.metrics.detaches.inc()
        self.detached = True
        self.boot_id = uuid.uuid4().hex
        self._round = poll_rounds.Round()
        self._put_since = set()
        with self._report_lock:
            self._answer = None
        self._need_register.set()

    def register_once(self) -> RegistrationAck:
        ack = self.hub.register(self.advertise_url)
        self.apply(ack)
        return ack

    def apply(self, ack: RegistrationAck) -> None:
        if ack.id != self.node_id:
            logger.warning("node.id_mismatch", extra={"expected": self.node_id, "got": ack.id})
        self.node_id = ack.id
        self.poll_interval_s = ack.poll_interval_s
        self.watchdog.timeout_s = ack.detach_after_s
        self.registry.orphan_after_s = ack.orphan_after_s
        self._registration_failure = None
        self.detached = False
        self._need_register.clear()
        self.contact()
        logger.info("node.registered", extra={"node_id": ack.id, "hub": self.hub.hub_url})

    @property
    def registration_pending(self) -> bool:
        return self._need_register.is_set()

    def register_until_answered(self) -> bool:
        """Register, backing off with jitter between failures, until the hub answers or shutdown."""
        attempt = 0
        while not self._stop.is_set():
            try:
                self.register_once()
                return True
            except HubError as exc:
                self._registration_failure = exc
                delay = self.backoff.delay(attempt)
                attempt += 1
                logger.warning("node.register_failed", extra={"error": str(exc), "retry_in_s": round(delay, 2)})
                if self._wait(delay):
                    return False
        return False

    def _register_loop(self) -> None:
        while not self._stop.is_set():
            if self._need_register.wait(0.5):
                self.register_until_answered()

    # -- threads -----------------------------------------------------------------------------
    def start(self) -> None:
        for name, target in (("register", self._register_loop),
                             ("watchdog", lambda: self.watchdog.run(self._stop))):
            t = threading.Thread(target=target, name=f"node-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    def shutdown(self) -> None:
        self._stop.set()
        self.registry.clear()
        if self.feeds is not None:
            self.feeds.stop()
        if self.dumps is not None:
            self.dumps.stop()
        if self.catch_up is not None:
            self.catch_up.stop()
        if self.members is not None:
            self.members.stop()
        if self.census is not None:
            self.census.stop()
        for t in self._threads:
            t.join(2.0)
