"""SQL of quota leases: load the lease state, write back only what a tick changed.

Functions take the session first and never commit; blackwidow.leasing owns the transactions.
Times cross into blackwidow.quota.arithmetic as epoch seconds (floats); rows store aware datetimes.
"""
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.models import LeaseHolder, Node, Subscription, SubscriptionLease, Tenant
from blackwidow.quota.arithmetic import Holder, SubLease
from blackwidow.store.pagination import as_utc
from blackwidow.store.upserts import upsert

_CHUNK = 500


@dataclass(frozen=True)
class TenantQuota:
    id: str
    quota: int | None
    reserved: int
    unleased_at: datetime | None


@dataclass(frozen=True)
class LeaseSnapshot:
    tenants: dict[str, TenantQuota]           # tenants with a quota, or with something still reserved
    states: dict[str, SubLease]               # by subscription id (deleted subscriptions included)
    renewing: frozenset[tuple[str, str]]      # (subscription id, node id) renewed every poll


def epoch(value: datetime) -> float:
    return as_utc(value).timestamp()


def from_epoch(value: float) -> datetime:
    return datetime.fromtimestamp(value, timezone.utc)


def load(session: Session) -> LeaseSnapshot:
    tenants = {r.id: TenantQuota(r.id, r.quota, r.reserved, _aware(r.unleased_at))
               for r in session.execute(sa.select(Tenant.id, Tenant.quota, Tenant.reserved, Tenant.unleased_at)
                                        .where(sa.or_(Tenant.quota.isnot(None), Tenant.reserved != 0)))}
    stamps = {r.id: _aware(r.lease_sent_at) for r in session.execute(
        sa.select(Node.id, Node.lease_sent_at).where(Node.lease_sent_at.isnot(None)))}
    holders: dict[str, dict[str, Holder]] = {}
    renewing = set()
    for r in session.execute(sa.select(LeaseHolder)).scalars():
        sent = stamps.get(r.node_id) if r.renewing else None
        holders.setdefault(r.subscription_id, {})[r.node_id] = Holder(
            gen=r.gen, cap=r.cap, held=r.held, sent_at=epoch(sent or r.sent_at), acked=r.acked,
            confirmed=r.confirmed, boot=r.boot)
        if r.renewing:
            renewing.add((r.subscription_id, r.node_id))
    states = {r.subscription_id: SubLease(r.tenant_id, gen=r.gen, floor=r.floor, floor_gen=r.floor_gen, seen=r.seen,
                                          holders=holders.get(r.subscription_id, {}))
              for r in session.execute(sa.select(SubscriptionLease)).scalars()}
    return LeaseSnapshot(tenants, states, frozenset(renewing))


def leased_subscription_tenants(session: Session) -> set[str]:
    """Ids of tenants that have a quota (their subscriptions run leased)."""
    return set(session.scalars(sa.select(Tenant.id).where(Tenant.quota.isnot(None))))


def stamp_nodes(session: Session, node_ids: Iterable[str], at: datetime) -> None:
    """Before polling: these nodes may receive leases from now on (write-ahead)."""
    ids = sorted(set(node_ids))
    for start in range(0, len(ids), _CHUNK):
        session.execute(sa.update(Node).where(Node.id.in_(ids[start:start + _CHUNK])).values(lease_sent_at=at))


def save(session: Session, before: LeaseSnapshot, after: Mapping[str, SubLease],
         renewing: frozenset[tuple[str, str]]) -> None:
    """Write the differences between `before` and `after` (states by subscription id); a state absent
    from `after` is deleted with its holders. `renewing`: holders whose lease this tick's polls carry."""
    gone = [sid for sid in before.states if sid not in after]
    for start in range(0, len(gone), _CHUNK):
        session.execute(sa.delete(LeaseHolder).where(LeaseHolder.subscription_id.in_(gone[start:start + _CHUNK])))
        session.execute(sa.delete(SubscriptionLease)
                        .where(SubscriptionLease.subscription_id.in_(gone[start:start + _CHUNK])))
    state_rows, holder_rows, dropped = [], [], []
    for sid, st in after.items():
        old = before.states.get(sid)
        if old is None or (old.tenant_id, old.gen, old.floor, old.floor_gen, old.seen) != \
                (st.tenant_id, st.gen, st.floor, st.floor_gen, st.seen):
            state_rows.append({"subscription_id": sid, "tenant_id": st.tenant_id, "gen": st.gen, "floor": st.floor,
                               "floor_gen": st.floor_gen, "seen": st.seen})
        old_holders = old.holders if old is not None else {}
        dropped += [(sid, node) for node in old_holders if node not in st.holders]
        for node, h in st.holders.items():
            renews = (sid, node) in renewing
            was = old_holders.get(node)
            if was is not None and ((sid, node) in before.renewing) == renews and \
                    _same(was, h, ignore_sent_at=renews):
                continue
            holder_rows.append({"subscription_id": sid, "node_id": node, "gen": h.gen, "cap": h.cap, "held": h.held,
                                "sent_at": from_epoch(h.sent_at), "renewing": renews, "acked": h.acked,
                                "confirmed": h.confirmed, "boot": h.boot})
    for sid, node in dropped:
        session.execute(sa.delete(LeaseHolder).where(LeaseHolder.subscription_id == sid,
                                                     LeaseHolder.node_id == node))
    _upsert(session, SubscriptionLease, state_rows, ["subscription_id"])
    _upsert(session, LeaseHolder, holder_rows, ["subscription_id", "node_id"])


def save_tenants(session: Session, changes: Mapping[str, dict]) -> None:
    """{tenant id: {column: value}} for reserved / unleased_at."""
    for tenant_id, values in changes.items():
        session.execute(sa.update(Tenant).where(Tenant.id == tenant_id).values(**values))


def tenant_quota_rows(session: Session) -> list[tuple[str, str, int | None, int, int]]:
    """(id, name, quota, used, reserved) of every tenant, for metrics."""
    used = sa.func.coalesce(sa.func.sum(Subscription.revisions), 0)
    rows = session.execute(sa.select(Tenant.id, Tenant.name, Tenant.quota, used, Tenant.reserved)
                           .outerjoin(Subscription, Subscription.tenant_id == Tenant.id)
                           .group_by(Tenant.id, Tenant.name, Tenant.quota, Tenant.reserved).order_by(Tenant.name))
    return [(r[0], r[1], r[2], int(r[3]), int(r[4])) for r in rows]


def _same(a: Holder, b: Holder, *, ignore_sent_at: bool) -> bool:
    return (a.gen, a.cap, a.held, a.acked, a.confirmed, a.boot) == (b.gen, b.cap, b.held, b.acked, b.confirmed,
                                                                    b.boot) \
        and (ignore_sent_at or a.sent_at == b.sent_at)


def _upsert(session: Session, model, rows: list[dict], keys: list[str]) -> None:
    if not rows:
        return
    stmt = upsert(session, model.__table__)
    stmt = stmt.on_conflict_do_update(index_elements=keys,
                                      set_={c: stmt.excluded[c] for c in rows[0] if c not in keys})
    for start in range(0, len(rows), _CHUNK):
        session.execute(stmt, rows[start:start + _CHUNK])


def _aware(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)


def write_grants(session: Session, lease_round, at: datetime) -> None:
    """A tick's grants (blackwidow.quota.leasing.LeaseRound), before the polls that carry them leave."""
    save(session, lease_round.before, lease_round.states, lease_round.renewing)
    # only the nodes these polls carry leases to: every renewing holder is on one of them
    stamp_nodes(session, lease_round.per_node, at)
    save_tenants(session, lease_round.tenant_changes())


def write_learnt(session: Session, lease_round, learnt) -> None:
    """What the tick learnt from the answers (blackwidow.quota.leasing.Learnt), over its written grants."""
    written = LeaseSnapshot(lease_round.before.tenants, lease_round.states, lease_round.renewing)
    save(session, written, learnt.states, lease_round.renewing)
    save_tenants(session, learnt.tenants)
