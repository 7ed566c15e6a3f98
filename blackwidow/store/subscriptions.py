"""Subscriptions: plain functions over a session; flush, never commit.

The REST layer only writes rows here; the scheduler's next tick routes and sends them to spawns.
"""
import uuid
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from blackwidow import title_lists
from blackwidow.models import Subscription, Tenant, utcnow
from blackwidow.store import changes as changes_log
from blackwidow.store.pagination import page
from blackwidow.validation import ItemError, ItemsInvalid, NewSubscription
from shared.errors import Conflict, NotFound, ValidationError


def get_subscription(session, sub_id: str) -> Subscription:
    """Raises NotFound."""
    sub = session.get(Subscription, sub_id)
    if sub is None:
        raise NotFound(f"no subscription {sub_id}", field="id")
    return sub


def _refusals(session, news: list[NewSubscription]) -> list[ItemError]:
    tenant_ids = {n.tenant_id for n in news}
    known = set(session.scalars(sa.select(Tenant.id).where(Tenant.id.in_(tenant_ids))))
    existing = {(tenant_id, source) for tenant_id, source in session.execute(
        sa.select(Subscription.tenant_id, Subscription.source_uuid)
        .where(Subscription.tenant_id.in_(tenant_ids),
               Subscription.source_uuid.in_({n.source_uuid for n in news})))}
    errors, seen = [], set()
    for index, new in enumerate(news):
        key = (new.tenant_id, new.source_uuid)
        if new.tenant_id not in known:
            errors.append(ItemError(index, ValidationError(f"no tenant {new.tenant_id}", field="tenant_id")))
        elif key in existing:
            errors.append(ItemError(index, Conflict(
                f"tenant already subscribes to {new.title!r} on {new.wiki}", field="title")))
        elif key in seen:
            errors.append(ItemError(index, Conflict(
                f"{new.title!r} on {new.wiki} appears twice in this request", field="title")))
        seen.add(key)
    return errors


def create_subscriptions(session, news: list[NewSubscription]) -> list[Subscription]:
    """All or nothing. Raises ItemsInvalid listing every refused item (unknown tenant, duplicate)."""
    errors = _refusals(session, news)
    if errors:
        raise ItemsInvalid(errors)
    return insert(session, news)


def insert(session, news: list[NewSubscription], set_id: str | None = None) -> list[Subscription]:
    """The rows, unchecked (create_subscriptions checks); `set_id`: the category set that makes them."""
    if not news:
        return []
    now = utcnow()
    # One microsecond apart, so that listings (ordered by created_at, id) keep the request's order.
    stamps = [now + timedelta(microseconds=i) for i in range(len(news))]
    subs = [Subscription(id=str(uuid.uuid4()), tenant_id=n.tenant_id, wiki=n.wiki, title=n.title,
                         source_uuid=n.source_uuid, quota=n.quota, content=n.content, enabled=n.enabled,
                         state="pending" if n.enabled else "disabled", revisions=0, set_id=set_id,
                         created_at=at, updated_at=at)
            for n, at in zip(news, stamps)]
    session.add_all(subs)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict("a duplicate subscription was created at the same time; retry",
                       field="title") from None
    changes_log.note(session, (s.id for s in subs))
    return subs


# Bound parameters per lookup: SQLite takes at most 32,766 in one statement, and shorter IN lists plan better.
_LOOKUP_CHUNK = 500


def create_pages(session, request: title_lists.PagesRequest) -> dict:
    """The `pages` kind: creates what title_lists.plan() accepts and returns the per-item result.
    Raises ValidationError (unknown tenant_id), or Conflict when another request created one of the
    titles meanwhile (nothing is created; a retry reports that title as already subscribed)."""
    if session.get(Tenant, request.tenant_id) is None:
        raise ValidationError(f"no tenant {request.tenant_id}", field="tenant_id")
    sources = sorted(title_lists.held_sources(request))
    held: dict[str, str] = {}
    for start in range(0, len(sources), _LOOKUP_CHUNK):
        held.update((title, sub_id) for title, sub_id in session.execute(
            sa.select(Subscription.title, Subscription.id)
            .where(Subscription.tenant_id == request.tenant_id,
                   Subscription.source_uuid.in_(sources[start:start + _LOOKUP_CHUNK]))))
    decided = title_lists.plan(request, held)
    subs = insert(session, [new for _, new in decided.creates])
    return title_lists.result(request, decided, [s.id for s in subs])


def create_subscription(session, new: NewSubscription) -> Subscription:
    """Raises ValidationError (unknown tenant_id) or Conflict (the tenant already has this article)."""
    try:
        return create_subscriptions(session, [new])[0]
    except ItemsInvalid as exc:
        raise exc.errors[0].error from None


def list_subscriptions(session, *, limit: int, cursor: str | None = None, tenant_id: str | None = None,
                       state: str | None = None, node_id: str | None = None):
    """A page of subscriptions in creation order, and the next page's cursor (None at the end)."""
    stmt = sa.select(Subscription)
    if tenant_id is not None:
        stmt = stmt.where(Subscription.tenant_id == tenant_id)
    if state is not None:
        stmt = stmt.where(Subscription.state == state)
    if node_id is not None:
        stmt = stmt.where(Subscription.node_id == node_id)
    rows, next_cursor = page(session, stmt, Subscription.created_at, Subscription.id, limit=limit,
                             cursor=cursor)
    return [row[0] for row in rows], next_cursor


def update_subscription(session, sub_id: str, changes: dict) -> Subscription:
    """enabled=false -> state disabled; enabled=true on a disabled one -> pending (routed again);
    a quota raised above what was harvested lifts limit_reached. Raises NotFound."""
    sub = get_subscription(session, sub_id)
    if "enabled" in changes and changes["enabled"] != sub.enabled:
        sub.enabled = changes["enabled"]
        sub.state = "pending" if sub.enabled else "disabled"
    if "quota" in changes:
        sub.quota = changes["quota"]
        if sub.state == "limit_reached" and (sub.quota is None or sub.quota > sub.revisions):
            sub.state = "pending"
    if "content" in changes:
        sub.content = changes["content"]
    session.flush()
    changes_log.note(session, [sub.id])
    return sub


def delete_subscription(session, sub_id: str) -> None:
    """Deletes the row (and its assignment); the scheduler then drops it from its spawn. Raises NotFound."""
    session.delete(get_subscription(session, sub_id))
    session.flush()
    changes_log.note(session, [sub_id])
