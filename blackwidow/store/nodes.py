"""Spawn nodes as the API sees them: registration and listing. Liveness is the poller's business."""
from datetime import datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from blackwidow.models import Node, Subscription, utcnow
from shared.errors import Conflict, NotFound
from shared.hashing import node_id_for


class NodeLoad(NamedTuple):
    node: Node
    subscriptions: int      # subscriptions currently assigned to it


def register_node(session, url: str, *, now: datetime | None = None) -> tuple[Node, bool]:
    """Idempotent by url (the id derives from it): a known node is marked live again with its failure
    count reset. Returns (node, created)."""
    now = now or utcnow()
    node_id = node_id_for(url)
    node = session.get(Node, node_id)
    created = node is None
    if created:
        node = Node(id=node_id, url=url.rstrip("/"), state="live", registered_at=now, consecutive_failures=0)
        session.add(node)
    else:
        node.state = "live"
        node.consecutive_failures = 0
        node.registered_at = now
    try:
        session.flush()
    except IntegrityError:
        # Two workers registering the same url at once: the spawn retries and finds the row.
        raise Conflict("this node is being registered concurrently; retry", field="url") from None
    return node, created


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
