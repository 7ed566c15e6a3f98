"""SQL of the poll tick: read a snapshot of nodes, subscriptions and assignments; write outcomes.

Functions take the session first and never commit; poller.poll_once owns the transactions.
Rows leave this module as frozen views so that no ORM object crosses an HTTP call.
"""
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from blackwidow.models import Assignment, Node, Reload, Subscription
from shared.wire import SubscriptionSpec

_UPSERTS = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}

LIVE = "live"
DEAD = "dead"


@dataclass(frozen=True)
class NodeView:
    id: str
    url: str
    state: str
    consecutive_failures: int
    boot_id: str | None


@dataclass(frozen=True)
class SubscriptionView:
    id: str
    spec: SubscriptionSpec
    enabled: bool
    state: str
    node_id: str | None
    revisions: int
    last_rev_id: int | None
    last_error: str | None


@dataclass(frozen=True)
class AssignmentView:
    node_id: str
    acked: bool
    sent_at: datetime | None


@dataclass(frozen=True)
class Snapshot:
    nodes: dict[str, NodeView]
    subscriptions: dict[str, SubscriptionView]
    assignments: dict[str, AssignmentView]


_SUBSCRIPTION_COLUMNS = (Subscription.id, Subscription.source_uuid, Subscription.tenant_id, Subscription.wiki,
                         Subscription.title, Subscription.content, Subscription.quota, Subscription.enabled,
                         Subscription.state, Subscription.node_id, Subscription.revisions, Subscription.last_rev_id,
                         Subscription.last_error)


def load_snapshot(session: Session) -> Snapshot:
    # plain column rows, not ORM entities: a tick reads every subscription, and entities cost 3x
    nodes = {r.id: NodeView(r.id, r.url, r.state, r.consecutive_failures, r.boot_id)
             for r in session.execute(sa.select(Node.id, Node.url, Node.state, Node.consecutive_failures,
                                                Node.boot_id))}
    subs = {}
    for r in session.execute(sa.select(*_SUBSCRIPTION_COLUMNS)):
        spec = SubscriptionSpec(id=r.id, source_uuid=r.source_uuid, tenant_id=r.tenant_id, wiki=r.wiki,
                                title=r.title, content=bool(r.content), quota=r.quota)
        subs[r.id] = SubscriptionView(r.id, spec, r.enabled, r.state, r.node_id, r.revisions, r.last_rev_id,
                                      r.last_error)
    assignments = {r.subscription_id: AssignmentView(r.node_id, r.acked, _aware(r.sent_at))
                   for r in session.execute(sa.select(Assignment.subscription_id, Assignment.node_id,
                                                      Assignment.acked, Assignment.sent_at))}
    return Snapshot(nodes, subs, assignments)


def record_node_polls(session: Session, at: datetime, ok: Mapping[str, str],
                      failed: Mapping[str, int], dead: Iterable[str]) -> None:
    """ok: {node_id: boot_id} of answered polls; failed: {node_id: consecutive failures}; dead: removed nodes."""
    for node_id, boot_id in ok.items():
        session.execute(sa.update(Node).where(Node.id == node_id, Node.state == LIVE)
                        .values(last_seen=at, consecutive_failures=0, boot_id=boot_id))
    dead = set(dead)
    for node_id, count in failed.items():
        values = {"consecutive_failures": count}
        if node_id in dead:
            values["state"] = DEAD
        # a node that re-registered meanwhile is live again with a fresh count: leave it alone
        session.execute(sa.update(Node).where(Node.id == node_id, Node.state == LIVE,
                                              Node.consecutive_failures == count - 1).values(**values))


def lock_existing_subscriptions(session: Session, ids: Iterable[str]) -> set[str]:
    """Of `ids`, those still present; on PostgreSQL their rows stay locked until commit, so a
    concurrent delete cannot strand an assignment row mid-transaction."""
    ids = sorted(set(ids))
    present: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        present.update(session.scalars(sa.select(Subscription.id).where(Subscription.id.in_(chunk))
                                       .order_by(Subscription.id).with_for_update()))
    return present


def update_subscriptions(session: Session, changes: Mapping[str, dict],
                         seen: Mapping[str, SubscriptionView]) -> None:
    """Write {sub_id: {column: value}}; a row the admin API changed since `seen` (enabled or state)
    is skipped, the next tick reconciles it. Rows with the same changed columns go in one executemany."""
    table = Subscription.__table__
    groups: dict[tuple[str, ...], list[dict]] = {}
    for sub_id, values in changes.items():
        before = seen[sub_id]
        params = {"b_id": sub_id, "b_enabled": before.enabled, "b_state": before.state}
        params.update({f"v_{k}": v for k, v in values.items()})
        groups.setdefault(tuple(sorted(values)), []).append(params)
    for columns, rows in groups.items():
        stmt = (sa.update(table)
                .where(table.c.id == sa.bindparam("b_id"), table.c.enabled == sa.bindparam("b_enabled"),
                       table.c.state == sa.bindparam("b_state"))
                .values({c: sa.bindparam(f"v_{c}") for c in columns}))
        session.execute(stmt, rows)


def save_assignments(session: Session, upserts: Mapping[str, AssignmentView], deletes: Iterable[str]) -> None:
    """Replace the assignment of each subscription in `upserts`; delete those in `deletes`."""
    deletes = list(deletes)
    for start in range(0, len(deletes), 500):
        session.execute(sa.delete(Assignment).where(Assignment.subscription_id.in_(deletes[start:start + 500])))
    if not upserts:
        return
    rows = [{"subscription_id": sub_id, "node_id": a.node_id, "acked": a.acked, "sent_at": a.sent_at}
            for sub_id, a in upserts.items()]
    dialect = session.get_bind().dialect.name
    if dialect not in _UPSERTS:
        raise NotImplementedError(f"assignments upsert on {dialect}")
    stmt = _UPSERTS[dialect](Assignment.__table__)
    stmt = stmt.on_conflict_do_update(index_elements=["subscription_id"],
                                      set_={c: stmt.excluded[c] for c in ("node_id", "acked", "sent_at")})
    session.execute(stmt, rows)


def record_reload(session: Session, kind: str, reason: str, sends: int, drops: int, at: datetime) -> None:
    session.add(Reload(kind=kind, reason=reason[:200], sends=sends, drops=drops, at=at))


def _aware(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything stored here is UTC
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value
