"""Spawn nodes as the API sees them: registration and listing. Liveness is the poller's business."""
from datetime import datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from blackwidow import liveness
from blackwidow.models import Node, Subscription, utcnow
from blackwidow.store.pagination import as_utc
from shared.config import HubConfig
from shared.errors import Conflict, NotFound, Unavailable
from shared.hashing import node_id_for


# the rule's numbers live in HubConfig's defaults (BW_NODE_FLAP_*), stated once
DEFAULT_FLAPPING = liveness.Flapping(limit=HubConfig.node_flap_restarts, window_s=HubConfig.node_flap_window_s,
                                     quarantine_s=HubConfig.node_quarantine_s)


class NodeLoad(NamedTuple):
    node: Node
    subscriptions: int      # subscriptions currently assigned to it


def register_node(session, url: str, *, now: datetime | None = None,
                  flapping: liveness.Flapping = DEFAULT_FLAPPING) -> tuple[Node, bool]:
    """Idempotent by url (the id derives from it): a known node is marked live again with its failure
    count reset, unless it keeps restarting (blackwidow.liveness): then it is marked dead and stays dead
    (the caller refuses it: `refusal(node)`), and later registrations raise Unavailable until its quarantine
    ends. Returns (node, created)."""
    now = now or utcnow()
    node_id = node_id_for(url)
    node = session.get(Node, node_id)
    created = node is None
    if not created and liveness.quarantined(_utc(node.quarantined_until), now):
        raise _quarantined(node)
    restarts = liveness.after_registration(
        not created, liveness.Restarts(node.restarts if node else 0, _utc(node.restarts_since) if node else None,
                                       None), now, flapping)
    if created:
        node = Node(id=node_id, url=url.rstrip("/"), state="live", registered_at=now, consecutive_failures=0)
        session.add(node)
    node.restarts, node.restarts_since = restarts.count, restarts.since
    node.quarantined_until = restarts.quarantined_until
    if restarts.quarantined_until is not None:
        node.state = "dead"              # written: the scheduler stops polling it and moves its work
        session.flush()
        return node, created
    node.state = "live"
    node.consecutive_failures = 0
    node.registered_at = now
    try:
        session.flush()
    except IntegrityError:
        # Two workers registering the same url at once: the spawn retries and finds the row.
        raise Conflict("this node is being registered concurrently; retry", field="url") from None
    return node, created


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)


def refusal(node: Node) -> Unavailable | None:
    """Why a node just registered is refused, or None."""
    return _quarantined(node) if node.quarantined_until is not None else None


def _quarantined(node: Node) -> Unavailable:
    until = _utc(node.quarantined_until)
    assert until is not None, "only a quarantined node is refused"
    return Unavailable(f"node {node.id} restarted too often and is refused until {until:%Y-%m-%dT%H:%M:%SZ}",
                       field="url", retry_after_s=max(1, int((until - utcnow()).total_seconds())))


def _with_load():
    return (sa.select(Node, sa.func.count(Subscription.id))
            .outerjoin(Subscription, Subscription.node_id == Node.id)
            .group_by(Node.id).order_by(Node.id))


def list_nodes(session) -> list[NodeLoad]:
    """Every known node, sorted by id (the routing order)."""
    return [NodeLoad(*row) for row in session.execute(_with_load())]


def get_node(session, node_id: str) -> NodeLoad:
    """Raises NotFound."""
    row = session.execute(_with_load().where(Node.id == node_id)).first()
    if row is None:
        raise NotFound(f"no node {node_id}", field="id")
    return NodeLoad(*row)
