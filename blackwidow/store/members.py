"""SQL of category sets' listings and members (`wiki_sets`, `set_members`; blackwidow.members_plan), and the
subscriptions that follow them. Functions take the session first and never commit.

The members of the listing held whole become the set's subscriptions, one per page for the set's tenant, as if the
tenant had subscribed to each title (so two tenants' sets that share a page share its source): a page that joins
the category gets one, a page that leaves loses it (its stored revisions stay: they are the wiki's). A page the
tenant already subscribes to on its own keeps that subscription, which the set counts and never deletes. A set with
dump files gets its subscriptions once every file is written: each then starts from what the dump stored.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.members_plan import Intake, ListingState
from blackwidow.models import DumpFile, SetMember, Subscription, WikiSet
from blackwidow.store import changes as changes_log
from blackwidow.store import subscriptions as subscriptions_store
from blackwidow.store.pagination import as_utc
from blackwidow.validation import NewSubscription
from shared.dump_wire import DONE
from shared.hashing import source_uuid

CATEGORY = "category"
MAX_ERROR = 500
_CHUNK = 500            # bound parameters per IN list


def load_listings(session: Session) -> dict[str, ListingState]:
    """The enabled category sets: the listings a tick reads."""
    rows = session.scalars(sa.select(WikiSet).where(WikiSet.kind == CATEGORY, WikiSet.enabled.is_(True)))
    return {s.id: listing_state(s) for s in rows}


def listing_state(s: WikiSet) -> ListingState:
    return ListingState(set_id=s.id, wiki=s.wiki, tenant_id=s.tenant_id, category=s.category or "",
                        depth=s.depth or 0, node=s.members_node, held=s.members_digest,
                        receiving=s.members_receiving, next_part=s.members_next_part, total=s.members_total,
                        read_at=None if s.members_read_at is None else as_utc(s.members_read_at),
                        requests=s.members_requests, error=s.members_error)


def save_listings(session: Session, listings: Mapping[str, ListingState], before: Mapping[str, ListingState],
                  intakes: Mapping[str, Intake]) -> None:
    """Write the listings that changed and the parts taken in; a set deleted meanwhile is skipped. A complete
    listing marks its set to be followed (`follow`)."""
    for sid, s in listings.items():
        if before.get(sid) == s and sid not in intakes:
            continue
        row = session.get(WikiSet, sid)
        if row is None:
            continue
        row.members_node, row.members_digest, row.members_receiving = s.node, s.held, s.receiving
        row.members_next_part, row.members_total, row.members_read_at = s.next_part, s.total, s.read_at
        row.members_requests = s.requests
        row.members_error = None if s.error is None else s.error[:MAX_ERROR]
        intake = intakes.get(sid)
        if intake is not None:
            _write_part(session, sid, intake)
            if intake.complete:
                session.execute(sa.delete(SetMember).where(SetMember.set_id == sid,
                                                           SetMember.listing != intake.digest))
                row.members_dirty = True


def _write_part(session: Session, set_id: str, intake: Intake) -> None:
    ids = [m.page_id for m in intake.members]
    known: dict[int, SetMember] = {}
    for start in range(0, len(ids), _CHUNK):
        known.update((m.page_id, m) for m in session.scalars(
            sa.select(SetMember).where(SetMember.set_id == set_id, SetMember.page_id.in_(ids[start:start + _CHUNK]))))
    for m in intake.members:
        row = known.get(m.page_id)
        if row is None:
            session.add(SetMember(set_id=set_id, page_id=m.page_id, ns=m.ns, title=m.title, listing=intake.digest))
        else:
            row.ns, row.title, row.listing = m.ns, m.title, intake.digest
    session.flush()


def follow_all(session: Session) -> dict[str, tuple[int, int]]:
    """Every category set whose held listing is not yet followed, once its dump files are all written: its
    subscriptions made and removed. Returns {set id: (created, removed)}."""
    unfinished = sa.select(DumpFile.id).where(DumpFile.set_id == WikiSet.id, DumpFile.state != DONE).exists()
    ready = session.scalars(sa.select(WikiSet).where(
        WikiSet.kind == CATEGORY, WikiSet.members_dirty.is_(True), WikiSet.members_receiving.is_(None),
        ~unfinished)).all()
    out = {}
    for s in ready:
        out[s.id] = follow(session, s)
        s.members_dirty = False
    return out


def follow(session: Session, s: WikiSet) -> tuple[int, int]:
    """The set's subscriptions made to equal its members. Returns (created, removed)."""
    members = session.scalars(sa.select(SetMember).where(SetMember.set_id == s.id)).all()
    linked = {m.subscription_id for m in members if m.subscription_id is not None}
    owned = set(session.scalars(sa.select(Subscription.id).where(Subscription.set_id == s.id)))
    gone = sorted(owned - linked)
    if gone:
        for start in range(0, len(gone), _CHUNK):
            session.execute(sa.delete(Subscription).where(Subscription.id.in_(gone[start:start + _CHUNK])))
        changes_log.note(session, gone)
    existing = _existing(session, linked)
    unsubscribed = {str(source_uuid(s.wiki, m.title)): m for m in members
                    if m.subscription_id is None or m.subscription_id not in existing}
    held = _held(session, s.tenant_id, list(unsubscribed))
    news = []
    for source, m in unsubscribed.items():
        if source in held:
            m.subscription_id = held[source]          # the tenant's own: counted, never deleted by the set
        else:
            news.append(NewSubscription(tenant_id=s.tenant_id, wiki=s.wiki, title=m.title, source_uuid=source,
                                        quota=None, content=s.content, enabled=s.enabled))
    made = subscriptions_store.insert(session, news, set_id=s.id)
    for sub in made:
        unsubscribed[sub.source_uuid].subscription_id = sub.id
    session.flush()
    return len(made), len(gone)


def _existing(session: Session, ids: Iterable[str]) -> set[str]:
    ordered, out = sorted(ids), set[str]()
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start:start + _CHUNK]
        out.update(session.scalars(sa.select(Subscription.id).where(Subscription.id.in_(chunk))))
    return out


def _held(session: Session, tenant_id: str, sources: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for start in range(0, len(sources), _CHUNK):
        out.update(session.execute(sa.select(Subscription.source_uuid, Subscription.id).where(
            Subscription.tenant_id == tenant_id, Subscription.source_uuid.in_(sources[start:start + _CHUNK]))).all())
    return out


def member_page_ids(session: Session, set_ids: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """{set id: its members' page ids, sorted}, for the category sets among `set_ids` whose listing is held."""
    ids = sorted(set(set_ids))
    out: dict[str, list[int]] = {}
    for start in range(0, len(ids), _CHUNK):
        for set_id, page_id in session.execute(
                sa.select(SetMember.set_id, SetMember.page_id).where(SetMember.set_id.in_(ids[start:start + _CHUNK]))
                .order_by(SetMember.set_id, SetMember.page_id)):
            out.setdefault(set_id, []).append(page_id)
    return {sid: tuple(pages) for sid, pages in out.items()}


def owned_subscriptions(session: Session, set_id: str) -> list[Subscription]:
    return list(session.scalars(sa.select(Subscription).where(Subscription.set_id == set_id)))


def counts(session: Session, set_id: str) -> dict[str, int]:
    """The set's members, and its subscriptions by state (its own and the tenant's it counts)."""
    rows = session.execute(
        sa.select(Subscription.state, sa.func.count()).join(SetMember, SetMember.subscription_id == Subscription.id)
        .where(SetMember.set_id == set_id).group_by(Subscription.state)).all()
    members = session.scalar(sa.select(sa.func.count()).select_from(SetMember).where(SetMember.set_id == set_id))
    complete = session.scalar(
        sa.select(sa.func.count()).select_from(SetMember)
        .join(Subscription, SetMember.subscription_id == Subscription.id)
        .where(SetMember.set_id == set_id, Subscription.complete.is_(True)))
    return {"members": members or 0, "subscribed": sum(n for _, n in rows), "complete": complete or 0,
            **{f"state_{state}": n for state, n in rows}}


def remove_set(session: Session, set_id: str) -> None:
    """Before a set is deleted: its own subscriptions and its members."""
    gone = [sub.id for sub in owned_subscriptions(session, set_id)]
    for start in range(0, len(gone), _CHUNK):
        session.execute(sa.delete(Subscription).where(Subscription.id.in_(gone[start:start + _CHUNK])))
    if gone:
        changes_log.note(session, gone)
    session.execute(sa.delete(SetMember).where(SetMember.set_id == set_id))
