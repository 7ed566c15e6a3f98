"""Fencing for the acting scheduler: an epoch in the database that each new leader increments, and a check
that every write transaction of a tick makes first (docs/coordination.md, "Exactly one scheduler").

The lock (blackwidow.leadership) decides who should lead; the epoch makes a deposed leader harmless. `check`
updates the epoch row where the epoch is still ours, which takes that row's lock until commit: a new leader's
`claim` (an UPDATE of the same row) waits for a write in progress and is ordered after it, and every write
the deposed leader attempts afterwards finds another epoch and raises LeadershipLost before changing
anything. The same row records when the leader last finished a tick, for the hub's /health.
"""
from dataclasses import dataclass
from datetime import datetime
from typing import cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.models import SchedulerEpoch

NAME = "scheduler"


class LeadershipLost(Exception):
    """Another scheduler claimed a newer epoch: this one must stop writing and stop its tick."""


@dataclass(frozen=True)
class Fence:
    epoch: int
    holder: str


def claim(session: Session, holder: str, at: datetime) -> Fence:
    """Become the acting scheduler: a new epoch. Waits for a write of the previous leader in progress."""
    bumped = session.execute(sa.update(SchedulerEpoch).where(SchedulerEpoch.name == NAME)
                             .values(epoch=SchedulerEpoch.epoch + 1, holder=holder, acquired_at=at)
                             .returning(SchedulerEpoch.epoch)).scalar()
    if bumped is None:
        session.add(SchedulerEpoch(name=NAME, epoch=1, holder=holder, acquired_at=at))
        session.flush()
        bumped = 1
    return Fence(int(bumped), holder)


def check(session: Session, fence: Fence, *, ticked_at: datetime | None = None) -> None:
    """First statement of every write transaction of a tick: raise LeadershipLost unless `fence` is current.
    With `ticked_at`, also record a finished tick."""
    values: dict = {"holder": fence.holder}
    if ticked_at is not None:
        values["last_tick_at"] = ticked_at
    # an UPDATE's result is a CursorResult, the kind that counts rows
    rows = cast(sa.CursorResult, session.execute(sa.update(SchedulerEpoch)
                                                 .where(SchedulerEpoch.name == NAME,
                                                        SchedulerEpoch.epoch == fence.epoch)
                                                 .values(**values))).rowcount
    if rows != 1:
        raise LeadershipLost(f"epoch {fence.epoch} is no longer current")


def release(session: Session, fence: Fence) -> None:
    """On a clean stop: no holder, so /health does not report a leader that left."""
    session.execute(sa.update(SchedulerEpoch)
                    .where(SchedulerEpoch.name == NAME, SchedulerEpoch.epoch == fence.epoch)
                    .values(holder=None))
