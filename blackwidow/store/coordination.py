"""SQL of the poll tick: read a snapshot of nodes, subscriptions and assignments; write outcomes.

Functions take the session first and never commit; poller.poll_once owns the transactions.
Rows leave this module as frozen views so that no ORM object crosses an HTTP call.
"""
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.models import Assignment, Node, Reload, Subscription
from shared.wire import SubscriptionSpec

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


def spec_of(sub: Subscription) -> SubscriptionSpec:
    """What a spawn is sent for a subscription row."""
    return SubscriptionSpec(id=sub.id, source_uuid=sub.source_uuid, tenant_id=sub.tenant_id, wiki=sub.wiki,
                            title=sub.title, content=bool(sub.content), quota=sub.quota)


def load_snapshot(session: Session) -> Snapshot:
    nodes = {n.id: NodeView(n.id, n.url, n.state, n.consecutive_failures, n.boot_id)
             for n in session.scalars(sa.select(Node))}
    subs = {s.id: SubscriptionView(s.id, spec_of(s), s.enabled, s.state, s.node_id, s.revisions, s.last_rev_id,
                                   s.last_error)
            for s in session.scalars(sa.select(Subscription))}
    assignments = {a.subscription_id: AssignmentView(a.node_id, a.acked, _aware(a.sent_at))
                   for a in session.scalars(sa.select(Assignment))}
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
                         seen: Mapping[str, SubscriptionView]) -> int:
    """Write {sub_id: {column: value}}; a row the admin API changed since `seen` (enabled or state)
    is skipped, the next tick reconciles it. Returns the rows written."""
    written = 0
    for sub_id, values in changes.items():
        before = seen[sub_id]
        result = session.execute(sa.update(Subscription)
                                 .where(Subscription.id == sub_id, Subscription.enabled == before.enabled,
                                        Subscription.state == before.state)
                                 .values(**values))
        written += result.rowcount
    return written


def save_assignments(session: Session, upserts: Mapping[str, AssignmentView], deletes: Iterable[str]) -> None:
    """Replace the assignment of each subscription in `upserts`; delete those in `deletes`."""
    deletes = list(deletes)
    for start in range(0, len(deletes), 500):
        session.execute(sa.delete(Assignment).where(Assignment.subscription_id.in_(deletes[start:start + 500])))
    for sub_id, view in upserts.items():
        row = session.get(Assignment, sub_id)
        if row is None:
            session.add(Assignment(subscription_id=sub_id, node_id=view.node_id, acked=view.acked,
                                   sent_at=view.sent_at))
        else:
            row.node_id, row.acked, row.sent_at = view.node_id, view.acked, view.sent_at
    session.flush()


def record_reload(session: Session, kind: str, reason: str, sends: int, drops: int, at: datetime) -> None:
    session.add(Reload(kind=kind, reason=reason[:200], sends=sends, drops=drops, at=at))


def _aware(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything stored here is UTC
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value
