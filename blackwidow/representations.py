"""API output shapes of the store's rows. Pure: the one place that decides what clients see."""
from datetime import datetime

from blackwidow.models import Subscription
from blackwidow.store.nodes import NodeLoad
from blackwidow.store.pagination import as_utc
from blackwidow.store.tenants import TenantUsage


def timestamp(value: datetime | None) -> str | None:
    return None if value is None else as_utc(value).isoformat().replace("+00:00", "Z")


def tenant(usage: TenantUsage) -> dict:
    t = usage.tenant
    return {"id": t.id, "name": t.name, "quota": t.quota, "used": int(usage.used),
            "subscriptions": int(usage.subscriptions),
            "created_at": timestamp(t.created_at), "updated_at": timestamp(t.updated_at)}


def subscription(s: Subscription) -> dict:
    return {"id": s.id, "tenant_id": s.tenant_id, "wiki": s.wiki, "title": s.title,
            "source_uuid": s.source_uuid, "quota": s.quota, "content": s.content, "enabled": s.enabled,
            "state": s.state, "node": s.node_id, "revisions": s.revisions, "last_rev_id": s.last_rev_id,
            "last_error": s.last_error, "created_at": timestamp(s.created_at),
            "updated_at": timestamp(s.updated_at)}


def node(load: NodeLoad) -> dict:
    n = load.node
    return {"id": n.id, "url": n.url, "state": n.state, "last_seen": timestamp(n.last_seen),
            "registered_at": timestamp(n.registered_at), "consecutive_failures": n.consecutive_failures,
            "subscriptions": int(load.subscriptions)}


def page(items: list[dict], next_cursor: str | None) -> dict:
    return {"items": items, "next_cursor": next_cursor}
