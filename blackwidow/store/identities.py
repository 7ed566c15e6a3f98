"""SQL of upstream identities (docs/upstream.md): their limits, the slot holds written ahead of the polls,
pauses and credential refusals nodes report. Functions take the session first and never commit.

An identity's id is its wiki's host[:port]. A host that subscriptions name but that has no row yet uses
the defaults for its host (blackwidow.upstream.limits); its row is created by the first tick that writes
a hold for it, or by an admin PUT/PATCH, so subscription creation stays as it is.
"""
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.models import Identity, IdentityWindow, Subscription, Tenant, utcnow
from blackwidow.upstream.allocate import IdentityState, Plan
from blackwidow.upstream.limits import Limits, default_limits
from blackwidow.upstream.slots import Hold
from shared.errors import NotFound
from shared.hashing import wiki_key
from shared.wire import IdentityUse

LIMIT_FIELDS = ("in_flight", "per_s", "per_min", "slow_after_s", "slow_wait_s", "maxlag", "credential")
MAX_REASON = 500
MAX_PAUSE_S = 3600.0          # a Retry-After beyond this is read as this: an admin can lift a pause sooner


@dataclass(frozen=True)
class IdentityView:
    """An identity as the API shows it: its row, or the defaults for a subscribed host without one."""
    id: str
    limits: Limits
    configured: bool                   # a row exists (an admin or a tick wrote it)
    gen: int
    paused_until: float | None
    pause_reason: str | None
    auth_error: str | None
    auth_error_node: str | None
    holds: tuple[Hold, ...]            # not ended yet
    subscriptions: int
    created_at: datetime | None
    updated_at: datetime | None


@dataclass(frozen=True)
class UpstreamSnapshot:
    identities: dict[str, IdentityState]       # every identity with a row or a subscription
    weights: dict[str, float]                  # tenant id -> weight
    stored: frozenset[str]                     # ids that have a row


def identity_of(wiki: str) -> str:
    """The identity of a subscription's wiki (its canonical api.php URL): the host[:port]."""
    return wiki_key(wiki)


def limits_of(row: Identity) -> Limits:
    return Limits(row.in_flight, row.per_s, row.per_min, row.slow_after_s, row.slow_wait_s, row.maxlag,
                  row.credential)


def _hold(row: IdentityWindow) -> Hold:
    return Hold(row.slot, row.node_id, row.start_s, row.end_s, row.rate_per_s, row.gen, row.after_give_back)


def _subscribed_hosts(session: Session) -> dict[str, int]:
    counts: dict[str, int] = {}
    for wiki, n in session.execute(sa.select(Subscription.wiki, sa.func.count()).group_by(Subscription.wiki)):
        counts[identity_of(wiki)] = counts.get(identity_of(wiki), 0) + n
    return counts


def load(session: Session, reported: Iterable[str] = ()) -> UpstreamSnapshot:
    """Everything the tick's allocation needs, in one read: identities (rows, and defaults for the
    identities nodes reported using without one), every hold written and not dropped, tenant weights.
    Only a node's report creates demand, so no scan of the subscriptions is needed on the tick's path."""
    rows = {r.id: r for r in session.scalars(sa.select(Identity))}
    holds: dict[str, list[Hold]] = {}
    for w in session.scalars(sa.select(IdentityWindow)):
        holds.setdefault(w.identity_id, []).append(_hold(w))
    states = {}
    for host in sorted({*rows, *reported}):
        row = rows.get(host)
        if row is None:
            states[host] = IdentityState(host, default_limits(host), 0, None, ())
        else:
            states[host] = IdentityState(host, limits_of(row), row.gen, row.paused_until,
                                         tuple(holds.get(host, ())))
    weights = {tid: w for tid, w in session.execute(sa.select(Tenant.id, Tenant.weight))}
    return UpstreamSnapshot(states, weights, frozenset(rows))


def save(session: Session, snapshot: UpstreamSnapshot, plans: Mapping[str, Plan]) -> None:
    """Write ahead of the polls: each planned identity's generation, its new and extended holds, and
    drop the holds it no longer needs. Creates the rows of identities that had none (defaults)."""
    now = utcnow()
    for identity_id, plan in plans.items():
        if identity_id not in snapshot.stored and session.get(Identity, identity_id) is None:
            limits = snapshot.identities[identity_id].limits
            session.add(Identity(id=identity_id, **{f: getattr(limits, f) for f in LIMIT_FIELDS}, gen=plan.gen,
                                 created_at=now, updated_at=now))
            session.flush()
        else:
            session.execute(sa.update(Identity).where(Identity.id == identity_id, Identity.gen < plan.gen)
                            .values(gen=plan.gen))
        for h in plan.drops:
            session.execute(sa.delete(IdentityWindow).where(
                IdentityWindow.identity_id == identity_id, IdentityWindow.slot == h.slot,
                IdentityWindow.start_s == h.start))
        for h in plan.cuts:         # given back by its node: the only way a hold ever gets shorter
            session.execute(sa.update(IdentityWindow).where(
                IdentityWindow.identity_id == identity_id, IdentityWindow.slot == h.slot,
                IdentityWindow.start_s == h.start).values(end_s=h.end, gen=h.gen))
        for h in plan.writes:
            row = session.get(IdentityWindow, (identity_id, h.slot, h.start))
            if row is None:
                session.add(IdentityWindow(identity_id=identity_id, slot=h.slot, start_s=h.start, end_s=h.end,
                                           node_id=h.node, rate_per_s=h.rate_per_s, gen=h.gen,
                                           after_give_back=h.after_give_back))
            else:
                row.end_s, row.gen = max(row.end_s, h.end), h.gen       # an extension never shortens
    session.flush()


def _pause_of(use: IdentityUse, now: float, skew_s: float) -> float:
    """The pause a node reported, in hub time (its wall clock, so one skew later), capped; -1 for none."""
    return -1.0 if use.paused_until is None else min(use.paused_until + skew_s, now + MAX_PAUSE_S)


def worth_recording(uses: Mapping[str, IdentityUse], *, now: float, skew_s: float) -> bool:
    """Whether `record_use` would write anything for these uses: a pause still running, or a refusal."""
    return any(_pause_of(u, now, skew_s) > now or u.auth_error is not None for u in uses.values())


def record_use(session: Session, node_id: str, uses: Mapping[str, IdentityUse], *, now: float,
               skew_s: float) -> set[str]:
    """A node's report: a pause it saw (its wall clock, so one skew later in hub time) becomes the
    identity's pause when it lasts longer than the current one; a credential refusal is kept with the
    node that saw it. Returns the ids of identities whose pause changed (their budgets change)."""
    changed = set()
    for identity_id, use in uses.items():
        pause = _pause_of(use, now, skew_s)
        if pause <= now and use.auth_error is None:
            continue
        row = _ensure(session, identity_id)
        if pause > now and (row.paused_until is None or pause > row.paused_until):
            row.paused_until = pause
            row.pause_reason = (use.pause_reason or "paused by a node")[:MAX_REASON]
            row.gen += 1
            changed.add(identity_id)
        if use.auth_error is not None:
            row.auth_error, row.auth_error_node = use.auth_error[:MAX_REASON], node_id
    session.flush()
    return changed


def _ensure(session: Session, identity_id: str) -> Identity:
    row = session.get(Identity, identity_id)
    if row is None:
        limits = default_limits(identity_id)
        row = Identity(id=identity_id, **{f: getattr(limits, f) for f in LIMIT_FIELDS}, gen=0)
        session.add(row)
    return row


# --- the admin API ---------------------------------------------------------------------------------

def _view(row: Identity | None, host: str, holds: Iterable[Hold], subscriptions: int) -> IdentityView:
    if row is None:
        return IdentityView(host, default_limits(host), False, 0, None, None, None, None, tuple(holds),
                            subscriptions, None, None)
    return IdentityView(host, limits_of(row), True, row.gen, row.paused_until, row.pause_reason, row.auth_error,
                        row.auth_error_node, tuple(holds), subscriptions, row.created_at, row.updated_at)


def list_identities(session: Session, *, now: float) -> list[IdentityView]:
    """Every identity with a row or a subscription, by id, with the holds not ended at `now`."""
    rows = {r.id: r for r in session.scalars(sa.select(Identity))}
    counts = _subscribed_hosts(session)
    holds: dict[str, list[Hold]] = {}
    for w in session.scalars(sa.select(IdentityWindow).where(IdentityWindow.end_s > now)
                             .order_by(IdentityWindow.start_s, IdentityWindow.slot)):
        holds.setdefault(w.identity_id, []).append(_hold(w))
    return [_view(rows.get(host), host, holds.get(host, ()), counts.get(host, 0))
            for host in sorted({*rows, *counts})]


def get_identity(session: Session, identity_id: str, *, now: float) -> IdentityView:
    """Raises NotFound for a host with neither a row nor a subscription."""
    row = session.get(Identity, identity_id)
    count = _subscribed_hosts(session).get(identity_id, 0)
    if row is None and not count:
        raise NotFound(f"no identity {identity_id}", field="id")
    holds = [_hold(w) for w in session.scalars(
        sa.select(IdentityWindow).where(IdentityWindow.identity_id == identity_id, IdentityWindow.end_s > now)
        .order_by(IdentityWindow.start_s, IdentityWindow.slot))]
    return _view(row, identity_id, holds, count)


def put_identity(session: Session, identity_id: str, values: Mapping) -> bool:
    """Sets every limit: the given values, the host's defaults (for the given credential) for the others.
    Returns whether the row was created."""
    limits = default_limits(identity_id, values.get("credential"))
    full = {f: values.get(f, getattr(limits, f)) for f in LIMIT_FIELDS}
    row = session.get(Identity, identity_id)
    created = row is None
    _apply(_ensure(session, identity_id), full)
    session.flush()
    return created


def patch_identity(session: Session, identity_id: str, changes: Mapping) -> None:
    """Sets the given limits; the others keep their values (a host without a row starts from its
    defaults). `paused_until: null` lifts a pause."""
    row = _ensure(session, identity_id)
    if "paused_until" in changes:
        row.paused_until = row.pause_reason = None
    _apply(row, {k: v for k, v in changes.items() if k in LIMIT_FIELDS})
    session.flush()


def _apply(row: Identity, values: Mapping) -> None:
    if "credential" in values and values["credential"] != row.credential:
        row.auth_error = row.auth_error_node = None      # a refusal was about the old credential
    for name, value in values.items():
        setattr(row, name, value)
    row.gen = (row.gen or 0) + 1                          # new limits reach the nodes with the next budgets
    row.updated_at = utcnow()


def set_tenant_weight(session: Session, tenant_id: str, weight: float) -> None:
    session.execute(sa.update(Tenant).where(Tenant.id == tenant_id).values(weight=weight))
    session.flush()
