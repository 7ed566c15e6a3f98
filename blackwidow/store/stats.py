"""Counts for /metrics, read in one short transaction."""
import sqlalchemy as sa

from blackwidow.models import Node, Subscription, Tenant


def _by_state(session, model) -> dict[str, int]:
    rows = session.execute(sa.select(model.state, sa.func.count()).group_by(model.state))
    return {state: count for state, count in rows}


def store_counts(session) -> dict:
    return {
        "subscriptions": _by_state(session, Subscription),
        "nodes": _by_state(session, Node),
        "tenants": session.scalar(sa.select(sa.func.count()).select_from(Tenant)),
    }
