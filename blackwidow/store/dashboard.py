"""What the operator's dashboard shows, read in one transaction: nodes, subscriptions by state, the most
recently changed subscriptions, the busiest tenants, the latest reloads, the upstream identities and the
wikis' change feeds, the dump bootstraps. Reads only."""
from typing import NamedTuple

import sqlalchemy as sa

from blackwidow.models import Reload, Subscription, Tenant
from blackwidow.store.dumps import SetView, list_sets
from blackwidow.store.feeds import FeedView, list_feeds
from blackwidow.store.identities import IdentityView, list_identities
from blackwidow.store.nodes import NodeLoad, list_nodes
from blackwidow.store.stats import store_counts
from blackwidow.store.tenants import TenantUsage, busiest_tenants

RECENT_SUBSCRIPTIONS = 25
TENANTS = 25
RELOADS = 15


class DashboardData(NamedTuple):
    nodes: list[NodeLoad]                             # live ones first, then by url
    subscription_states: dict[str, int]
    revisions: int                                    # harvested over all subscriptions
    recent: list[tuple[Subscription, str]]            # (subscription, tenant name), newest change first
    tenants: list[TenantUsage]                        # most revisions harvested first
    tenant_count: int
    reloads: list[Reload]                             # newest first
    identities: list[IdentityView] = []               # by host, with the windows not ended
    feeds: list[FeedView] = []                        # by wiki
    sets: list[SetView] = []                          # set subscriptions and their dump files, oldest first


def dashboard_data(session, *, state: str | None = None, now: float = 0.0) -> DashboardData:
    """`state` narrows the recent subscriptions to that state; every count stays global. `now` (epoch
    seconds): windows that ended before it are left out."""
    counts = store_counts(session)
    recent = (sa.select(Subscription, Tenant.name).join(Tenant, Tenant.id == Subscription.tenant_id)
              .order_by(Subscription.updated_at.desc(), Subscription.id).limit(RECENT_SUBSCRIPTIONS))
    if state is not None:
        recent = recent.where(Subscription.state == state)
    return DashboardData(
        nodes=sorted(list_nodes(session), key=lambda load: (load.node.state != "live", load.node.url)),
        subscription_states=counts["subscriptions"],
        revisions=session.scalar(sa.select(sa.func.coalesce(sa.func.sum(Subscription.revisions), 0))),
        recent=[(sub, name) for sub, name in session.execute(recent)],
        tenants=busiest_tenants(session, limit=TENANTS),
        tenant_count=counts["tenants"],
        reloads=list(session.scalars(sa.select(Reload).order_by(Reload.id.desc()).limit(RELOADS))),
        identities=list_identities(session, now=now),
        feeds=list_feeds(session),
        sets=list_sets(session),
    )
