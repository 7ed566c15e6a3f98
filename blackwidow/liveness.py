"""Pure rules for a node's liveness: failed polls, and processes that keep restarting (flapping).

A registration of a node the hub already knows means its process restarted or detached. A spawn that
crashes on a poison page and is restarted every few seconds would otherwise keep its share forever, since
each registration makes it live again: after `limit` registrations within `window_s` it is evicted and
refused for `quarantine_s`.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Flapping:
    limit: int
    window_s: float
    quarantine_s: float


@dataclass(frozen=True)
class Restarts:
    count: int
    since: datetime | None
    quarantined_until: datetime | None


def quarantined(until: datetime | None, now: datetime) -> bool:
    return until is not None and now < until


def after_registration(known: bool, before: Restarts, now: datetime, rule: Flapping) -> Restarts:
    """The restart bookkeeping once a node registers (known: the hub had it already)."""
    if not known:
        return Restarts(0, now, None)
    if before.since is None or (now - before.since).total_seconds() > rule.window_s:
        count, since = 1, now            # the window starts again
    else:
        count, since = before.count + 1, before.since
    if count >= rule.limit:
        return Restarts(0, None, now + timedelta(seconds=rule.quarantine_s))
    return Restarts(count, since, None)


def failed_poll_evicts(failures: int, limit: int) -> bool:
    return failures >= limit
