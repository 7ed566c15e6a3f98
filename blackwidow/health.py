"""Pure: whether the hub deployment can make progress, from what the database says. No I/O, no clock.

The API answers requests, but only the scheduler moves work to spawns. So the hub is healthy when its
database answers AND a scheduler leads AND that leader finished a tick recently; anything else is a
503 naming the reason (docs/coordination.md, "Health").
"""
from dataclasses import dataclass
from datetime import datetime, timezone

SCHEDULER_ROW = "scheduler"       # scheduler_epoch.name of the acting scheduler
MIN_STALE_AFTER_S = 30.0
STALE_INTERVALS = 10


@dataclass(frozen=True)
class SchedulerRow:
    """The scheduler_epoch row of the acting scheduler, as read."""
    holder: str | None
    last_tick_at: datetime | None


@dataclass(frozen=True)
class HubHealth:
    healthy: bool
    body: dict


def stale_after_s(poll_interval_s: float) -> float:
    """How old the leader's last finished tick may be. Ten intervals absorb a slow tick (a hard reload at
    1,000 spawns takes about 20 s) and clock skew between hosts; 30 s at least, because the ALB adds its
    own three failed checks before it acts."""
    return max(MIN_STALE_AFTER_S, STALE_INTERVALS * poll_interval_s)


def _utc(at: datetime) -> datetime:
    # SQLite hands back naive datetimes; the scheduler writes UTC
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


def hub_health(database_ok: bool, scheduler: SchedulerRow | None, now: datetime,
               poll_interval_s: float) -> HubHealth:
    """`scheduler` is None when no scheduler ever took the lead (no row)."""
    limit = stale_after_s(poll_interval_s)
    if not database_ok:
        return _unavailable("the configuration database does not answer", database="unreachable",
                            scheduler="unknown")
    if scheduler is None:
        return _unavailable("no scheduler has ever led this deployment", scheduler="absent")
    if not scheduler.holder:
        return _unavailable("no scheduler is leading", scheduler="no_leader")
    if scheduler.last_tick_at is None:
        return _unavailable("the leading scheduler has not finished a tick yet", scheduler="starting")
    age = (now - _utc(scheduler.last_tick_at)).total_seconds()
    facts = {"last_tick_age_s": round(max(age, 0.0), 1), "stale_after_s": limit}
    if age > limit:
        return _unavailable(f"the leading scheduler's last tick finished {age:.0f} s ago (limit {limit:.0f} s)",
                            scheduler="stalled", facts=facts)
    return HubHealth(True, {"status": "ok", "database": "ok", "scheduler": "ok", **facts})


def _unavailable(reason: str, *, database: str = "ok", scheduler: str,
                 facts: dict[str, float] | None = None) -> HubHealth:
    return HubHealth(False, {"status": "unavailable", "database": database, "scheduler": scheduler,
                             "reason": reason, **(facts or {})})
