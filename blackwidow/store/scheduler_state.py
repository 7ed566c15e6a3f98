"""The acting scheduler's row of scheduler_epoch: who acts, as the hub's /health sees it (one primary-key
read), and the paced routing a scheduler that takes over goes on from (blackwidow.rebalance)."""
import json

import sqlalchemy as sa

from blackwidow.fencing import NAME
from blackwidow.health import SCHEDULER_ROW, SchedulerRow
from blackwidow.models import SchedulerEpoch
from blackwidow.rebalance import Routing


def acting_scheduler(session) -> SchedulerRow | None:
    """None when no scheduler ever wrote its row."""
    row = session.get(SchedulerEpoch, SCHEDULER_ROW)
    return None if row is None else SchedulerRow(holder=row.holder, last_tick_at=row.last_tick_at)


def routing(session) -> Routing | None:
    """The routing the last scheduler moved through; None when none was written (or it cannot be read: the
    next tick then routes over the live nodes alone)."""
    text = session.execute(sa.select(SchedulerEpoch.routing).where(SchedulerEpoch.name == NAME)).scalar()
    if not text:
        return None
    try:
        return Routing.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError):
        return None


def save_routing(session, value: Routing) -> None:
    """In a tick's fenced write transaction (blackwidow.fencing.check first)."""
    session.execute(sa.update(SchedulerEpoch).where(SchedulerEpoch.name == NAME)
                    .values(routing=json.dumps(value.to_json())))
