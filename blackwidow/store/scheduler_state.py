"""The acting scheduler as the hub's /health sees it: one primary-key read of scheduler_epoch."""
from blackwidow.health import SCHEDULER_ROW, SchedulerRow
from blackwidow.models import SchedulerEpoch


def acting_scheduler(session) -> SchedulerRow | None:
    """None when no scheduler ever wrote its row."""
    row = session.get(SchedulerEpoch, SCHEDULER_ROW)
    return None if row is None else SchedulerRow(holder=row.holder, last_tick_at=row.last_tick_at)
