"""Tenants: plain functions over a session. They flush but never commit (the caller owns the transaction)."""
import uuid
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from blackwidow.models import Subscription, Tenant, utcnow
from blackwidow.store import changes as changes_log
from blackwidow.store.pagination import page
from shared.errors import Conflict, NotFound


class TenantUsage(NamedTuple):
    tenant: Tenant
    subscriptions: int
    used: int             # revisions harvested over all its subscriptions


def _with_usage():
    return (sa.select(Tenant, sa.func.count(Subscription.id),
                      sa.func.coalesce(sa.func.sum(Subscription.revisions), 0))
            .outerjoin(Subscription, Subscription.tenant_id == Tenant.id)
            .group_by(Tenant.id))


def _name_taken(name: str) -> Conflict:
    return Conflict(f"a tenant named {name!r} already exists", field="name")


def _flush(session, name: str) -> None:
    try:
        session.flush()
    except IntegrityError:
        raise _name_taken(name) from None


def get_tenant(session, tenant_id: str) -> Tenant:
    """Raises NotFound."""
    tenant = session.get(Tenant, tenant_id)
    if tenant is None:
        raise NotFound(f"no tenant {tenant_id}", field="id")
    return tenant


def tenant_usage(session, tenant_id: str) -> TenantUsage:
    """Raises NotFound."""
    row = session.execute(_with_usage().where(Tenant.id == tenant_id)).first()
    if row is None:
        raise NotFound(f"no tenant {tenant_id}", field="id")
    return TenantUsage(*row)


def create_tenant(session, *, name: str, quota: int | None = None) -> Tenant:
    """Raises Conflict (field name) when the name is taken."""
    if session.scalar(sa.select(Tenant.id).where(Tenant.name == name)) is not None:
        raise _name_taken(name)
    tenant = Tenant(id=str(uuid.uuid4()), name=name, quota=quota, used=0)
    session.add(tenant)
    _flush(session, name)
    return tenant


def list_tenants(session, *, limit: int, cursor: str | None = None) -> tuple[list[TenantUsage], str | None]:
    rows, next_cursor = page(session, _with_usage(), Tenant.created_at, Tenant.id, limit=limit, cursor=cursor)
    return [TenantUsage(*row) for row in rows], next_cursor


def busiest_tenants(session, *, limit: int) -> list[TenantUsage]:
    """The tenants that harvested the most revisions, then by name."""
    used = sa.func.coalesce(sa.func.sum(Subscription.revisions), 0)
    rows = session.execute(_with_usage().order_by(used.desc(), Tenant.name).limit(limit))
    return [TenantUsage(*row) for row in rows]


def update_tenant(session, tenant_id: str, changes: dict) -> Tenant:
    """Applies name and/or quota. Raises NotFound, Conflict."""
    tenant = get_tenant(session, tenant_id)
    if "name" in changes and changes["name"] != tenant.name:
        if session.scalar(sa.select(Tenant.id).where(Tenant.name == changes["name"])) is not None:
            raise _name_taken(changes["name"])
        tenant.name = changes["name"]
    if "quota" in changes:
        if tenant.quota is None and changes["quota"] is not None:
            # its subscriptions ran without leases until now: no lease is granted before they are
            # surely gone or switched (docs/quotas.md)
            tenant.unleased_at = utcnow()
        tenant.quota = changes["quota"]
    _flush(session, tenant.name)
    return tenant


def delete_tenant(session, tenant_id: str) -> None:
    """Deletes the tenant and (by ON DELETE CASCADE) its subscriptions. Raises NotFound."""
    tenant = get_tenant(session, tenant_id)
    changes_log.note(session, session.scalars(sa.select(Subscription.id).where(Subscription.tenant_id == tenant_id)))
    session.delete(tenant)
    session.flush()
