"""SQL of the poll tick: read a snapshot of nodes, subscriptions and assignments; write outcomes.

Functions take the session first and never commit; poller.poll_once owns the transactions.
Rows leave this module as frozen views so that no ORM object crosses an HTTP call.
"""
from dataclasses import dataclass, replace
from functools import cached_property
from datetime import datetime, timezone
from typing import Iterable, Mapping, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from blackwidow.models import Assignment, Node, Reload, Subscription
from blackwidow.store.upserts import upsert
from blackwidow.upstream.clock_check import ClockReading
from shared.hashing import wiki_key
from shared.wire import SubscriptionSpec

# Declarative classes type __table__ as any FromClause; these are the Tables models.py declares.
_NODES = cast(sa.Table, Node.__table__)
_SUBSCRIPTIONS = cast(sa.Table, Subscription.__table__)
_ASSIGNMENTS = cast(sa.Table, Assignment.__table__)

_BULK_ROWS = 5000        # rows per bulk UPDATE statement on PostgreSQL

T = TypeVar("T")

LIVE = "live"
DEAD = "dead"


@dataclass(frozen=True, slots=True)
class NodeView:
    id: str
    url: str
    state: str
    consecutive_failures: int
    boot_id: str | None


@dataclass(frozen=True, slots=True)
class SubscriptionView:
    id: str
    spec: SubscriptionSpec
    enabled: bool
    state: str
    node_id: str | None
    revisions: int
    last_rev_id: int | None
    last_error: str | None
    page_key: str | None = None
    complete: bool | None = None    # reported: the stored history proven equal to the wiki's (None: unknown)
    settled: bool | None = None     # reported: caught up past every change the feed routed to it
    watermark: datetime | None = None   # written when it stops being settled; not read into snapshots

    @property
    def route_key(self) -> str:
        """What routing hashes: the resolved article when a spawn reported it, else the source uuid."""
        return self.page_key or self.spec.source_uuid


@dataclass(frozen=True, slots=True)
class AssignmentView:
    node_id: str
    acked: bool
    sent_at: datetime | None
    failures: int = 0                 # consecutive re-sends after its node reported it failed
    retry_at: datetime | None = None  # the next such re-send waits until then


@dataclass(frozen=True)
class Snapshot:
    nodes: dict[str, NodeView]
    subscriptions: dict[str, SubscriptionView]
    assignments: dict[str, AssignmentView]

    @cached_property
    def by_node(self) -> dict[str, set[str]]:
        """{node id: the ids assigned to it}, built on first use and kept by this module's in-place changes:
        each poll names a node's ids, and grouping a million assignments every tick costs seconds."""
        index: dict[str, set[str]] = {}
        for sub_id, assignment in self.assignments.items():
            index.setdefault(assignment.node_id, set()).add(sub_id)
        return index

    def with_index_of(self, other: "Snapshot") -> "Snapshot":
        """This snapshot, sharing `other`'s assignment index (they share the assignments)."""
        if "by_node" in other.__dict__:
            self.__dict__["by_node"] = other.__dict__["by_node"]
        return self


_SUBSCRIPTION_COLUMNS = (Subscription.id, Subscription.source_uuid, Subscription.tenant_id, Subscription.wiki,
                         Subscription.title, Subscription.content, Subscription.quota, Subscription.enabled,
                         Subscription.state, Subscription.node_id, Subscription.revisions, Subscription.last_rev_id,
                         Subscription.last_error, Subscription.page_key, Subscription.complete,
                         Subscription.settled)


def load_snapshot(session: Session) -> Snapshot:
    """Every node, subscription and assignment. The rows are read on the session's connection, not through the
    session: the ORM's result handling cost 2-4 s of a million subscriptions' 12-15 s read, and these are
    plain column rows."""
    views = _Views()
    rows = session.connection().execute
    return Snapshot(_load_nodes(session), views.subscriptions(rows(sa.select(*_SUBSCRIPTION_COLUMNS))),
                    views.assignments(rows(sa.select(*_ASSIGNMENT_COLUMNS))))


def refresh_snapshot(session: Session, snap: Snapshot, ids: Iterable[str]) -> Snapshot:
    """`snap` (changed in place) with every node and the rows of subscriptions `ids` read again: those
    gone are removed with their assignments. The scheduler's snapshot between ticks (blackwidow.store.changes)."""
    views = _Views()
    ids = sorted(set(ids))
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        subs = views.subscriptions(session.execute(sa.select(*_SUBSCRIPTION_COLUMNS)
                                                   .where(Subscription.id.in_(chunk))))
        assignments = views.assignments(session.execute(sa.select(*_ASSIGNMENT_COLUMNS)
                                                        .where(Assignment.subscription_id.in_(chunk))))
        for sub_id in chunk:
            _put_or_pop(snap.subscriptions, sub_id, subs.get(sub_id))
            _assign(snap, sub_id, assignments.get(sub_id))
    return Snapshot(_load_nodes(session), snap.subscriptions, snap.assignments).with_index_of(snap)


def apply_settlement(snap: Snapshot, assignments: Mapping[str, AssignmentView], deleted: Iterable[str],
                     changes: Mapping[str, dict]) -> None:
    """What the tick wrote, applied to its snapshot in place (the rows it did not write are left: those the
    admin API changed meanwhile are read again through the change log)."""
    for sub_id, assignment in assignments.items():
        _assign(snap, sub_id, assignment)
    for sub_id in deleted:
        _assign(snap, sub_id, None)
    for sub_id, values in changes.items():
        sub = snap.subscriptions.get(sub_id)
        if sub is not None:
            snap.subscriptions[sub_id] = replace(sub, **values)


def _assign(snap: Snapshot, sub_id: str, assignment: AssignmentView | None) -> None:
    """Set or remove one assignment, keeping the node index when it was built."""
    index = snap.__dict__.get("by_node")
    if index is not None:
        old = snap.assignments.get(sub_id)
        if old is not None and (assignment is None or old.node_id != assignment.node_id):
            index.get(old.node_id, set()).discard(sub_id)
        if assignment is not None:
            index.setdefault(assignment.node_id, set()).add(sub_id)
    _put_or_pop(snap.assignments, sub_id, assignment)


def _put_or_pop(table: dict[str, T], key: str, value: T | None) -> None:
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value


_ASSIGNMENT_COLUMNS = (Assignment.subscription_id, Assignment.node_id, Assignment.acked, Assignment.sent_at,
                       Assignment.failures, Assignment.retry_at)
_CHUNK = 500


def live_node_urls(session: Session) -> dict[str, str]:
    """{node id: url} of the live nodes: cheap, read before the snapshot so that keepalives start at once."""
    return {node_id: url for node_id, url in session.execute(sa.select(Node.id, Node.url).where(Node.state == LIVE))}


def _load_nodes(session: Session) -> dict[str, NodeView]:
    return {r.id: NodeView(r.id, r.url, r.state, r.consecutive_failures, r.boot_id)
            for r in session.execute(sa.select(Node.id, Node.url, Node.state, Node.consecutive_failures,
                                               Node.boot_id))}


class _Views:
    """Rows as frozen views. Plain column rows unpacked as tuples, not ORM entities (3x dearer) nor attribute
    access; repeated strings (wiki, tenant, node, state) shared: a tick holds every subscription at once."""

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._identities: dict[str, str] = {}       # wiki -> its upstream identity (docs/upstream.md)

    def subscriptions(self, rows) -> dict[str, SubscriptionView]:
        share, identities = self._strings.setdefault, self._identities
        subs = {}
        for (sub_id, source, tenant, wiki, title, content, quota, enabled, state, node_id, revisions, last_rev_id,
             last_error, page_key, complete, settled) in rows:
            identity = identities.get(wiki)
            if identity is None:
                identity = identities.setdefault(wiki, wiki_key(wiki))
            spec = SubscriptionSpec(id=sub_id, source_uuid=source, tenant_id=share(tenant, tenant),
                                    wiki=share(wiki, wiki), title=title, content=bool(content), quota=quota,
                                    identity=identity)
            node_id = node_id and share(node_id, node_id)
            subs[sub_id] = SubscriptionView(sub_id, spec, enabled, share(state, state), node_id, revisions,
                                            last_rev_id, last_error, page_key, complete, settled)
        return subs

    def assignments(self, rows) -> dict[str, AssignmentView]:
        share = self._strings.setdefault
        return {sub_id: AssignmentView(share(node_id, node_id), acked, _aware(sent_at), failures, _aware(retry_at))
                for sub_id, node_id, acked, sent_at, failures, retry_at in rows}


def record_node_polls(session: Session, at: datetime, ok: Mapping[str, str],
                      failed: Mapping[str, int], dead: Iterable[str],
                      clocks: Mapping[str, ClockReading] | None = None) -> None:
    """ok: {node_id: boot_id} of answered polls; failed: {node_id: consecutive failures}; dead: removed nodes;
    clocks: what the answered polls read of the nodes' clocks (a node absent: no reading)."""
    clocks = clocks or {}
    rows = [(nid, boot, *((clocks[nid].offset_s, clocks[nid].error_s) if nid in clocks else (None, None)))
            for nid, boot in ok.items()]
    _update_rows(session, _NODES, ("id",), ("boot_id", "clock_offset_s", "clock_error_s"), rows,
                 where=(_NODES.c.state == LIVE,),
                 constants={"last_seen": at, "consecutive_failures": 0})
    dead = set(dead)
    for node_id, count in failed.items():
        values: dict[str, object] = {"consecutive_failures": count}
        if node_id in dead:
            values["state"] = DEAD
        # a node that re-registered meanwhile is live again with a fresh count: leave it alone
        session.execute(sa.update(Node).where(Node.id == node_id, Node.state == LIVE,
                                              Node.consecutive_failures == count - 1).values(**values))


def lock_existing_subscriptions(session: Session, ids: Iterable[str]) -> set[str]:
    """Of `ids`, those still present; on PostgreSQL their rows stay key-share locked until commit, so a
    concurrent delete cannot strand an assignment row mid-transaction. A key-share lock, not FOR UPDATE:
    a tick that moves a million subscriptions writes for minutes, and the admin API's updates of those rows
    (a PATCH, a re-enable) must not wait for it; the tick's own updates skip a row changed meanwhile."""
    ids = sorted(set(ids))
    present: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        present.update(session.scalars(sa.select(Subscription.id).where(Subscription.id.in_(chunk))
                                       .order_by(Subscription.id).with_for_update(read=True, key_share=True)))
    return present


def update_subscriptions(session: Session, changes: Mapping[str, dict],
                         seen: Mapping[str, SubscriptionView]) -> None:
    """Write {sub_id: {column: value}}; a row the admin API changed since `seen` (enabled or state)
    is skipped, the next tick reconciles it. Rows with the same changed columns are written together,
    built a chunk at a time: the tick that first hears a million nodes' counters would hold a million
    row tuples at once (some 150 MB at its peak)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for sub_id, values in changes.items():
        groups.setdefault(tuple(sorted(values)), []).append(sub_id)
    for columns, ids in groups.items():
        for start in range(0, len(ids), _BULK_ROWS):
            rows = [(sub_id, seen[sub_id].enabled, seen[sub_id].state, *(changes[sub_id][c] for c in columns))
                    for sub_id in ids[start:start + _BULK_ROWS]]
            _update_rows(session, _SUBSCRIPTIONS, ("id", "enabled", "state"), columns, rows)


def _update_rows(session: Session, table: sa.Table, match: tuple[str, ...], columns: tuple[str, ...],
                 rows: list[tuple], *, where: tuple = (),
                 constants: Mapping[str, object] | None = None) -> None:
    """For each row (match values..., new values...): UPDATE table SET columns (and `constants`) WHERE
    every `match` column equals the row's value (and `where` holds). On PostgreSQL one statement per
    chunk joins the rows as arrays (unnest): a statement per row costs a round trip each and, after a
    mass change of states with stale statistics, may be planned on the state index (ms per row)."""
    if not rows:
        return
    constants = dict(constants or {})
    if session.get_bind().dialect.name == "postgresql":
        names = [f"m_{c}" for c in match] + [f"v_{c}" for c in columns]
        types = [table.c[c].type for c in (*match, *columns)]
        # each chunk's rows found through the primary key: a hash join reads the whole table per chunk
        # (200 times for a million rows), which the planner prefers while the table is small
        session.execute(sa.text("SET LOCAL enable_hashjoin = off"))
        session.execute(sa.text("SET LOCAL enable_mergejoin = off"))
        for start in range(0, len(rows), _BULK_ROWS):
            v = _unnest(names, types, rows[start:start + _BULK_ROWS])
            session.execute(sa.update(table)
                            .where(*(table.c[c] == v.c[f"m_{c}"] for c in match), *where)
                            .values({**{c: v.c[f"v_{c}"] for c in columns}, **constants}))
        session.execute(sa.text("RESET enable_hashjoin"))
        session.execute(sa.text("RESET enable_mergejoin"))
        return
    params = [{**{f"m_{c}": value for c, value in zip(match, row)},
               **{f"v_{c}": value for c, value in zip(columns, row[len(match):])}} for row in rows]
    session.execute(sa.update(table)
                    .where(*(table.c[c] == sa.bindparam(f"m_{c}") for c in match), *where)
                    .values({**{c: sa.bindparam(f"v_{c}") for c in columns}, **constants}), params)


def save_assignments(session: Session, upserts: Mapping[str, AssignmentView], deletes: Iterable[str]) -> None:
    """Replace the assignment of each subscription in `upserts`; delete those in `deletes`."""
    deletes = list(deletes)
    for start in range(0, len(deletes), 500):
        session.execute(sa.delete(Assignment).where(Assignment.subscription_id.in_(deletes[start:start + 500])))
    if not upserts:
        return
    columns = ("subscription_id", "node_id", "acked", "sent_at", "failures", "retry_at")
    rows = [(sub_id, a.node_id, a.acked, a.sent_at, a.failures, a.retry_at) for sub_id, a in upserts.items()]
    insert = upsert(session, _ASSIGNMENTS)
    if session.get_bind().dialect.name == "postgresql":
        # rows joined as arrays (unnest), one statement per chunk: a placement or a move writes a row per
        # subscription, and a VALUES list rendered per row cost 17 s per 200,000 rows
        for start in range(0, len(rows), _BULK_ROWS):
            v = _unnest(columns, [_ASSIGNMENTS.c[c].type for c in columns], rows[start:start + _BULK_ROWS])
            stmt = insert.from_select(columns, sa.select(*(v.c[c] for c in columns)))
            session.execute(stmt.on_conflict_do_update(
                index_elements=["subscription_id"], set_={c: stmt.excluded[c] for c in columns[1:]}))
        return
    stmt = insert.on_conflict_do_update(index_elements=["subscription_id"],
                                        set_={c: insert.excluded[c] for c in columns[1:]})
    session.execute(stmt, [dict(zip(columns, row)) for row in rows])


def _unnest(names: Iterable[str], types: Iterable, rows: list[tuple]):
    """PostgreSQL: `rows` as a derived table v(names...), each column travelling as one array parameter."""
    names = list(names)
    arrays = zip(*rows)
    return (sa.func.unnest(*(sa.bindparam(n, list(a), type_=postgresql.ARRAY(t))
                             for n, t, a in zip(names, types, arrays)))
            .table_valued(*names).render_derived(name="v"))


def record_reload(session: Session, kind: str, reason: str, sends: int, drops: int, at: datetime) -> None:
    session.add(Reload(kind=kind, reason=reason[:200], sends=sends, drops=drops, at=at))


def _aware(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything stored here is UTC
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value
