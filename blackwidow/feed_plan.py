"""The change feed's rules on the hub (docs/coordination.md, "The change feed"). Pure: no I/O, no clock.

One node reads each wiki's feed for the whole cluster. Its reads are requests of the wiki's identity like
any other: under an identity budget they wait for a slot hold of the reader's node (docs/upstream.md), and a
node that waits in the freshness lane while another holds the slot takes it over. So the reader is the node
with the most requests waiting for that identity (its holds serve the feed too), and otherwise stays where it
is: a reader elsewhere would take the slot from a long backfill at every read. A new wiki's first reader is
chosen by rendezvous over the live nodes. What it reads comes back in its status report; the hub turns
each changed title into a nudge for the node that fetches that page (the subscription's route key is the
page key of that title) and delivers it in that node's next poll. A feed's position is acknowledged, and its
watermark advances, only once every nudge read up to it was delivered and every node that took one outside a
poll has answered a poll since (its statuses then show those pages unsettled, so no subscription shows a
watermark past a change its node has not read): a lost report, a failed poll or a restarted hub re-reads from
the acknowledged position, never skips.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Iterable, Mapping

from blackwidow import router
from shared.feed_wire import CHECK, REVISIONS, VISIBILITY, FeedDuty, FeedReport, Hides, Nudge, joined, stronger
from shared.hashing import source_uuid

# Nudges one poll carries to one node (about 100 bytes each); the rest wait for the next poll
MAX_NUDGES_PER_POLL = 5_000
# Tenants a reader's requests are counted under in the identity's freshness lane
MAX_DUTY_TENANTS = 20
# the span over which the slot time each node held is compared when placing a reader (reader_for), and the part
# of it one node must have held, and for how long, to take the feed over: only a node that is all but alone at the
# slot, not one of several taking turns (each move costs a read again and a turn of the slot)
READER_LOOKBACK_S = 60.0
HELD_NEARLY_ALL = 0.9
HELD_AT_LEAST_S = 30.0


@dataclass(frozen=True)
class WikiFeedState:
    """What the hub knows of one wiki's feed. `acked`/`watermark`: persisted; every change up to `acked` was
    delivered, nothing up to `watermark` (the wiki's clock) is unread. `read_to`/`covered_to`: what the reader
    reported, routed into `pending` ({node: {page key or None: kind}}) and not yet all delivered."""
    acked: str | None = None
    watermark: datetime | None = None
    read_to: str | None = None
    covered_to: datetime | None = None
    pending: Mapping[str, Mapping[str | None, str]] = field(default_factory=dict)
    revs: Mapping[str, frozenset[int]] = field(default_factory=dict)    # {page key: revisions the changes named}
    hides: Mapping[str, Hides] = field(default_factory=dict)            # {page key: fields revision deletion hid}
    blind: frozenset[str] = frozenset()     # page keys with a REVISIONS change that named none: read on
    reader: str | None = None
    reported_at: datetime | None = None
    error: str | None = None
    gaps_seen: frozenset[tuple[str, str | None]] = frozenset()
    gaps: int = 0
    last_gap: str | None = None
    changes: int = 0
    requests: int = 0
    # read up to `delivered_to` and all delivered; acknowledged once the `awaiting` nodes, which took nudges
    # outside a poll, answered a poll since
    delivered_to: str | None = None
    delivered_covered: datetime | None = None
    awaiting: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Wanted:
    """A wiki some enabled subscription wants: the identity its requests are paced by, and its tenants."""
    identity: str | None
    tenants: tuple[str, ...]


def reader_for(wiki: str, live: Iterable[str], current: str | None = None,
               waiting: Mapping[str, int] | None = None, held: Mapping[str, float] | None = None) -> str | None:
    """The node that reads the wiki's feed: one with far more requests waiting for the wiki's identity
    (`waiting`: {node: sources waiting or in flight}) than the current reader (more than twice as many and two
    more: a move costs a read again and a turn of the slot, so a few pages nudged here or there must not move
    it), or one that held nearly all of the identity's slot time lately (`held`: {node: slot-seconds over the
    last READER_LOOKBACK_S}; HELD_NEARLY_ALL of it, HELD_AT_LEAST_S at least), else the current reader while it
    is live, else the highest rendezvous weight. A read waits for a slot like backfill, so a reader on a node
    that rarely holds one reads only at that node's turns: one long history backfilling elsewhere (one source
    waiting, holding the slot for minutes) would leave the feed unread between them."""
    nodes = sorted(live)
    if not nodes:
        return None
    waiting, held = waiting or {}, held or {}
    base = current if current in nodes else router.node_for(f"feed\n{wiki}", nodes, router.RENDEZVOUS)

    def far_busier(than: str) -> str | None:
        busiest = max(nodes, key=lambda node: (waiting.get(node, 0), node == than, node))
        return busiest if waiting.get(busiest, 0) > 2 * waiting.get(than, 0) + 2 else None

    busier = far_busier(base)
    if busier is not None:
        return busier
    holder = max(nodes, key=lambda node: (held.get(node, 0.0), node == base, node))
    most = held.get(holder, 0.0)
    # never to a node the waiting rule would take it from at the next tick: the two rules would toss it back
    # and forth, a read again and a turn of the slot each time
    if most >= HELD_AT_LEAST_S and most >= HELD_NEARLY_ALL * sum(held.values()) and far_busier(holder) is None:
        return holder
    return base


def duties(feeds: Mapping[str, WikiFeedState], wanted: Mapping[str, Wanted], live: Iterable[str],
           interval_s: float, waiting: Mapping[str | None, Mapping[str, int]] | None = None,
           held: Mapping[str | None, Mapping[str, float]] | None = None) -> dict[str, dict[str, FeedDuty]]:
    """{node: {wiki: FeedDuty}}: each wanted wiki's feed on its reader, from the acknowledged position.
    `waiting`: {identity: {node: sources waiting}} from the nodes' last reports; `held`: {identity: {node:
    slot-seconds held over the last READER_LOOKBACK_S}}."""
    nodes = sorted(live)
    out: dict[str, dict[str, FeedDuty]] = {}
    for wiki, want in sorted(wanted.items()):
        state = feeds.get(wiki, WikiFeedState())
        node = reader_for(wiki, nodes, state.reader, (waiting or {}).get(want.identity),
                          (held or {}).get(want.identity))
        if node is None:
            continue
        out.setdefault(node, {})[wiki] = FeedDuty(state.acked, interval_s, want.identity,
                                                  want.tenants[:MAX_DUTY_TENANTS])
    return out


def with_readers(feeds: Mapping[str, WikiFeedState],
                 duties: Mapping[str, Mapping[str, FeedDuty]]) -> dict[str, WikiFeedState]:
    """The feeds with the reader each duty went to, the next tick's current reader."""
    out = dict(feeds)
    for node, mine in duties.items():
        for wiki in mine:
            out[wiki] = replace(out.get(wiki, WikiFeedState()), reader=node)
    return out


def followed(feeds: Mapping[str, WikiFeedState], wanted: Mapping[str, Wanted], now: datetime,
             stale_s: float) -> tuple[str, ...]:
    """The wikis whose feed answered within `stale_s` without an error: their pages need no per-page
    revisits. Any other wiki's pages are revisited as before."""
    return tuple(sorted(w for w in wanted if _healthy(feeds.get(w), now, stale_s)))


def _healthy(state: WikiFeedState | None, now: datetime, stale_s: float) -> bool:
    return state is not None and state.reported_at is not None and state.error is None \
        and state.acked is not None and (now - state.reported_at).total_seconds() <= stale_s


def outgoing(feeds: Mapping[str, WikiFeedState]) -> dict[str, tuple[Nudge, ...]]:
    """{node: the nudges its next poll carries}, at most MAX_NUDGES_PER_POLL each (CHECKs first)."""
    out: dict[str, list[Nudge]] = {}
    for wiki, state in sorted(feeds.items()):
        for node, keys in state.pending.items():
            out.setdefault(node, []).extend(Nudge(wiki, kind, key, _named(state, key, kind),
                                                  state.hides.get(key, ()) if key is not None else ())
                                            for key, kind in keys.items())
    return {node: tuple(sorted(nudges, key=lambda n: n.key is not None)[:MAX_NUDGES_PER_POLL])
            for node, nudges in out.items()}


def _named(state: WikiFeedState, key: str | None, kind: str) -> tuple[int, ...]:
    """The revision ids a nudge carries: those to read again (VISIBILITY), or every revision the page's edits
    made (REVISIONS), which its node then fetches with other pages' in one request; none when a change of the
    page named none (a move, a deletion: the source reads on from its resume point)."""
    if key is None or kind not in (VISIBILITY, REVISIONS) or (kind == REVISIONS and key in state.blind):
        return ()
    return tuple(sorted(state.revs.get(key, ())))


def delivered(state: WikiFeedState, sent: Mapping[str, Iterable[Nudge]], answered: Iterable[str],
              live: Iterable[str]) -> WikiFeedState:
    """The nudges a node's answered poll carried are delivered; a node no longer live has none pending (its
    subscriptions go to other nodes, whose sources read on from the resume point anyway)."""
    live, answered = set(live), set(answered)
    pending: dict[str, dict[str | None, str]] = {}
    for node, keys in state.pending.items():
        if node not in live:
            continue
        done = {(n.key, n.kind) for n in sent.get(node, ())} if node in answered else set()
        left = {key: kind for key, kind in keys.items() if (key, kind) not in done}
        if left:
            pending[node] = left
    wanted = {key for keys in pending.values() for key in keys}
    return replace(state, pending=pending, revs={k: v for k, v in state.revs.items() if k in wanted},
                   hides={k: v for k, v in state.hides.items() if k in wanted}, blind=state.blind & wanted)


def keys_of(report: FeedReport, wiki: str) -> set[str]:
    """The page keys a report's changes name."""
    return {str(source_uuid(wiki, c.title)) for c in report.changes}


def absorb(state: WikiFeedState, reader: str, report: FeedReport, holders: Mapping[str, set[str]],
           nodes_of_wiki: Iterable[str], wiki: str, now: datetime) -> WikiFeedState:
    """The reader's report: changes after what was routed become nudges for the nodes holding those pages (of
    one page's kinds, the one that does what all ask: shared.feed_wire.stronger; VISIBILITY with every revision
    it names); a new gap becomes a CHECK for every node holding a page of the wiki. `holders`: {page key: nodes
    holding a subscription routed by it}, for the keys_of(report)."""
    pending = {node: dict(keys) for node, keys in state.pending.items()}
    revs = dict(state.revs)
    hides = dict(state.hides)
    blind = set(state.blind)
    routed = state.read_to
    fresh = [c for c in report.changes if routed is None or _after(c.at, routed)]
    for change in fresh:
        key = str(source_uuid(wiki, change.title))
        for node in holders.get(key, ()):
            keys = pending.setdefault(node, {})
            keys[key] = stronger(change.kind, keys.get(key))
        if holders.get(key):
            if change.rev_ids:
                revs[key] = revs.get(key, frozenset()) | frozenset(change.rev_ids)
            elif change.kind == REVISIONS:
                blind.add(key)
            if change.hide:
                hides[key] = joined(hides.get(key, ()), change.hide)
    new_gaps = [g for g in report.gaps if (g.start, g.end) not in state.gaps_seen]
    if new_gaps:
        for node in nodes_of_wiki:
            pending.setdefault(node, {})[None] = CHECK
    read_to = state.read_to
    if report.position is not None and (read_to is None or _after(report.position, read_to)):
        read_to = report.position
    covered = _parse_time(report.covered_to)
    if covered is not None and state.covered_to is not None and covered < state.covered_to:
        covered = state.covered_to
    return replace(state, pending=pending, revs=revs, hides=hides, blind=frozenset(blind), read_to=read_to,
                   covered_to=covered or state.covered_to, reader=reader, reported_at=now, error=report.error,
                   requests=report.requests,
                   changes=state.changes + len(fresh),
                   gaps_seen=state.gaps_seen | {(g.start, g.end) for g in new_gaps},
                   gaps=state.gaps + len(new_gaps),
                   last_gap=f"{new_gaps[-1].start}/{new_gaps[-1].end or ''}" if new_gaps else state.last_gap)


def confirm(state: WikiFeedState, answered: Iterable[str], live: Iterable[str]) -> WikiFeedState:
    """After a tick's polls: the nodes that answered (or are gone) no longer hold back what was delivered;
    once none does, it is acknowledged and the watermark advances to it."""
    awaiting = state.awaiting & frozenset(live) - frozenset(answered)
    state = replace(state, awaiting=awaiting)
    if awaiting or state.delivered_to is None:
        return state
    return replace(state, acked=state.delivered_to, watermark=state.delivered_covered or state.watermark,
                   delivered_to=None, delivered_covered=None)


def settle(state: WikiFeedState, took: Iterable[str] = ()) -> WikiFeedState:
    """At a tick's end: with nothing pending, everything read was delivered. `took`: the nodes that took this
    wiki's nudges outside a poll this tick; without any, what was read is acknowledged now, else once they
    answered a poll (confirm)."""
    if state.pending or state.read_to is None or (state.read_to, state.covered_to) == (state.acked, state.watermark):
        return state
    state = replace(state, delivered_to=state.read_to, delivered_covered=state.covered_to,
                    awaiting=state.awaiting | frozenset(took))
    return confirm(state, (), state.awaiting)


def frozen_watermarks(settled: Iterable[tuple[str, str, bool | None, bool | None]],
                      watermarks: Mapping[str, datetime | None]) -> dict[str, datetime | None]:
    """{subscription id: the watermark its row keeps} for (id, wiki, settled as stored, settled as the tick
    writes it): one that stops being settled keeps its wiki's watermark from before this tick (it held until
    this poll); a settled one shows its wiki's, so nothing is written for it."""
    return {sub_id: watermarks.get(wiki) for sub_id, wiki, was, now in settled if was and now is False}


def _after(a: str, b: str) -> bool:
    """Position token a is after b ("YYYYmmddHHMMSS|rcid": ordered by time, then rcid)."""
    ta, _, ra = a.partition("|")
    tb, _, rb = b.partition("|")
    return (ta, int(ra or 0)) > (tb, int(rb or 0))


def _parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)
