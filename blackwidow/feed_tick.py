"""What the scheduler's tick calls for the change feeds (docs/coordination.md, "The change feed"): the duties
and nudges its polls carry, the readers' reports routed to the nodes that fetch the pages, the nudges pushed at
once, the positions acknowledged. The rules live in blackwidow.feed_plan (pure); this module moves data between
them, the tick's snapshot and the spawns (POST /v1/changes). No SQL: blackwidow.poller reads and writes the
`wiki_feeds` rows.

Per tick (blackwidow.poller.poll_once):
  1. before the polls: `round = plan_round(memory, snap, seq, uses, live, config, at)`; each node's poll
     carries `round.for_node(node)`;
  2. after the polls: `read = read_reports(memory, round, polled, snap, live, at, metrics, version)`,
     `memory.feeds, pushed = push_nudges(client, read, polled, snap, live)`;
  3. after the sends: `memory.feeds = settled(memory.feeds, pushed, live, at, metrics)` and
     `freeze_watermarks(subscription changes, snap, the feeds as loaded)` before the tick records them.
"""
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Iterable, Mapping

from blackwidow import feed_plan, poll_pages
from blackwidow.decide import Polled
from blackwidow.metrics import SchedulerMetrics
from blackwidow.spawn_client import SpawnClient, SpawnError
from blackwidow.store.coordination import Snapshot
from shared.config import HubConfig
from shared.feed_wire import FeedDuty, Nudge
from shared.hashing import wiki_key
from shared.wire import IdentityUse

logger = logging.getLogger(__name__)

MAX_PUSHES = 32      # nodes sent their nudges at once


@dataclass
class FeedMemory:
    """What a scheduler process keeps between ticks for the change feeds."""
    # the change feeds followed (blackwidow.feed_plan); None: read again from the database
    feeds: dict[str, feed_plan.WikiFeedState] | None = None
    # the wikis enabled subscriptions want, as of a change number
    wanted: tuple[int, dict[str, feed_plan.Wanted]] | None = None
    # {wiki: {route key: subscription ids}} of the enabled subscriptions, as of a version of the snapshot (the
    # poller's: snapshot, change number, page keys written): a feed's changes are routed through it without a
    # pass over every subscription
    routes: tuple[tuple | None, dict[str, dict[str, list[str]]]] | None = None


@dataclass(frozen=True)
class FeedRound:
    """What this tick's polls carry for the change feeds: each reader's duties, each node's nudges, the
    followed wikis (blackwidow.feed_plan)."""
    duties: Mapping[str, Mapping[str, FeedDuty]] = field(default_factory=dict)
    nudges: Mapping[str, tuple[Nudge, ...]] = field(default_factory=dict)
    followed: tuple[str, ...] = ()

    def for_node(self, node: str) -> poll_pages.FeedPart:
        return poll_pages.FeedPart(self.duties.get(node, {}), self.nudges.get(node, ()), self.followed)


def plan_round(memory: FeedMemory, snap: Snapshot, seq: int, uses: Mapping[str, Mapping[str, IdentityUse]],
               live: frozenset[str], config: HubConfig, at: datetime,
               held: Mapping[str | None, Mapping[str, float]] | None = None) -> FeedRound:
    """The feeds' part of this tick's polls; the readers it names are kept in `memory.feeds`. `seq`: the change
    number `snap` is as of; `uses`: each node's latest `StatusReport.identities`; `held`: {identity: {node:
    slot-seconds held over the last feed_plan.READER_LOOKBACK_S}}."""
    if config.feed_interval_s <= 0 or memory.feeds is None:
        return FeedRound()
    if memory.wanted is None or memory.wanted[0] != seq:
        memory.wanted = (seq, _wanted(snap))
    wanted = memory.wanted[1]
    # a feed that missed three reads (or three polls) is not vouched for: its pages are revisited again
    stale_s = 3 * report_interval_s(config)
    waiting: dict[str | None, dict[str, int]] = {}
    for node, node_uses in uses.items():
        for identity, use in node_uses.items():
            waiting.setdefault(identity, {})[node] = sum(use.fresh.values()) + sum(use.backfill.values())
    duties = feed_plan.duties(memory.feeds, wanted, live, config.feed_interval_s, waiting, held)
    memory.feeds = _new_readers_spent_nothing(memory.feeds, feed_plan.with_readers(memory.feeds, duties))
    return FeedRound(duties, feed_plan.outgoing(memory.feeds), feed_plan.followed(memory.feeds, wanted, at, stale_s))


def report_interval_s(config: HubConfig) -> float:
    """How often a reader's report can reach the hub: it reads every feed interval and answers every poll."""
    return max(config.feed_interval_s, config.poll_interval_s)


def _new_readers_spent_nothing(before: Mapping[str, feed_plan.WikiFeedState],
                               after: dict[str, feed_plan.WikiFeedState]) -> dict[str, feed_plan.WikiFeedState]:
    """`requests` counts the current reader's: a feed whose reader changed starts again at 0."""
    return {wiki: replace(s, requests=0) if wiki in before and before[wiki].reader != s.reader else s
            for wiki, s in after.items()}


def spent(before: int, reported: int) -> int:
    """The requests a reader's report adds to the `before` already counted for it: the difference, or all of
    them when its count went back (its node restarted the reader)."""
    return reported - before if reported >= before else reported


def _wanted(snap: Snapshot) -> dict[str, feed_plan.Wanted]:
    tenants: dict[str, set[str]] = {}
    identity: dict[str, str | None] = {}
    for sub in snap.subscriptions.values():
        if sub.enabled:
            tenants.setdefault(sub.spec.wiki, set()).add(sub.spec.tenant_id)
            identity[sub.spec.wiki] = sub.spec.identity
    return {wiki: feed_plan.Wanted(identity[wiki], tuple(sorted(t))) for wiki, t in tenants.items()}


def read_reports(memory: FeedMemory, sent: FeedRound, polled: Polled, snap: Snapshot, live: frozenset[str],
                 at: datetime, metrics: SchedulerMetrics, version: tuple | None) -> dict[str, feed_plan.WikiFeedState]:
    """The feeds after this tick's polls: the nudges they carried delivered, the readers' reports routed.
    `version`: the snapshot's, for the route index (`routes`)."""
    answered = set(polled.reports)
    out = {wiki: feed_plan.confirm(feed_plan.delivered(s, sent.nudges, answered, live), answered, live)
           for wiki, s in (memory.feeds or {}).items()}
    readers = {wiki: node for node, duties in sent.duties.items() for wiki in duties}
    reports = {wiki: (node, polled.reports[node].feeds[wiki]) for wiki, node in readers.items()
               if node in polled.reports and wiki in polled.reports[node].feeds}
    index = routes(memory, snap, version) if any(r.changes or r.gaps for _, r in reports.values()) else {}
    for wiki, (node, report) in reports.items():
        before = out.get(wiki, feed_plan.WikiFeedState())
        keys = index.get(wiki, {})
        held = {key: nodes_of(snap, keys.get(key, ())) for key in feed_plan.keys_of(report, wiki)}
        nodes = nodes_of(snap, (sid for sids in keys.values() for sid in sids)) if report.gaps else set()
        after = feed_plan.absorb(before, node, report, held, nodes, wiki, at)
        label = wiki_key(wiki)
        if after.changes > before.changes:
            metrics.feed_changes.labels(label).inc(after.changes - before.changes)
        if report.requests != before.requests:
            metrics.feed_requests.labels(label).inc(spent(before.requests, report.requests))
        if after.gaps > before.gaps:
            metrics.feed_gaps.labels(label).inc(after.gaps - before.gaps)
            logger.warning("feed.gap", extra={"wiki": wiki, "gap": after.last_gap})
        out[wiki] = after
    return out


def push_nudges(client: SpawnClient, feeds: Mapping[str, feed_plan.WikiFeedState], polled: Polled,
                snap: Snapshot, live: frozenset[str],
                ) -> tuple[dict[str, feed_plan.WikiFeedState], dict[str, set[str]]]:
    """Send the pending nudges to the nodes that answered this tick's poll (POST /v1/changes, nodes at once);
    what a node took is delivered, the rest waits for its next poll. Also returns {wiki: the nodes that took
    its nudges}."""
    outgoing = {node: nudges for node, nudges in feed_plan.outgoing(feeds).items() if node in polled.reports}

    def push(node: str) -> str | None:
        try:
            client.send_changes(snap.nodes[node].url, outgoing[node])
            return node
        except SpawnError as exc:
            logger.warning("feed.nudges_failed", extra={"node": node, "error": str(exc)})
            return None
    took: set[str] = set()
    if outgoing:
        with ThreadPoolExecutor(max_workers=min(MAX_PUSHES, len(outgoing)), thread_name_prefix="bw-feed") as pool:
            took = {node for node in pool.map(push, sorted(outgoing)) if node is not None}
    by_wiki = {wiki: {node for node in s.pending if node in took} for wiki, s in feeds.items()}
    return {wiki: feed_plan.delivered(s, outgoing, took, live) for wiki, s in feeds.items()}, by_wiki


def settled(feeds: Mapping[str, feed_plan.WikiFeedState] | None, pushed: Mapping[str, set[str]],
            live: frozenset[str], at: datetime, metrics: SchedulerMetrics) -> dict[str, feed_plan.WikiFeedState]:
    """What is fully delivered acknowledged (or due once the nodes that took nudges this tick answer a poll);
    nothing pending for a node no longer live."""
    out = {wiki: feed_plan.settle(feed_plan.delivered(s, {}, (), live), pushed.get(wiki, ()))
           for wiki, s in (feeds or {}).items()}
    for wiki, s in out.items():
        if s.watermark is not None:
            metrics.feed_lag.labels(wiki_key(wiki)).set(max(0.0, (at - s.watermark).total_seconds()))
    return out


def routes(memory: FeedMemory, snap: Snapshot, version: tuple | None) -> dict[str, dict[str, list[str]]]:
    """{wiki: {route key: subscription ids}} of the enabled subscriptions, built again only when `version`
    moved (None: every time)."""
    if memory.routes is None or version is None or memory.routes[0] != version:
        index: dict[str, dict[str, list[str]]] = {}
        for sid, sub in snap.subscriptions.items():
            if sub.enabled:
                index.setdefault(sub.spec.wiki, {}).setdefault(sub.route_key, []).append(sid)
        memory.routes = (version, index)
        return index
    return memory.routes[1]


def nodes_of(snap: Snapshot, sub_ids: Iterable[str]) -> set[str]:
    """The nodes these subscriptions are assigned to (or were last placed on)."""
    out = set()
    for sid in sub_ids:
        a = snap.assignments.get(sid)
        node = a.node_id if a is not None else (snap.subscriptions[sid].node_id if sid in snap.subscriptions
                                                else None)
        if node is not None:
            out.add(node)
    return out


def freeze_watermarks(changes: dict[str, dict], snap: Snapshot,
                      feeds: Mapping[str, feed_plan.WikiFeedState]) -> None:
    """A subscription that stops being settled keeps the watermark its wiki had until now."""
    moved = [(sid, sub.spec.wiki, sub.settled, values["settled"]) for sid, values in changes.items()
             if "settled" in values for sub in (snap.subscriptions.get(sid),) if sub is not None]
    marks = {wiki: s.watermark for wiki, s in feeds.items()}
    for sid, mark in feed_plan.frozen_watermarks(moved, marks).items():
        changes[sid]["watermark"] = mark
