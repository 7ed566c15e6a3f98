"""Exactly one acting scheduler: a PostgreSQL advisory lock, or a lease row on other databases (SQLite).

Both offer try_acquire() (also renews), still_held() and release(). No scheduling logic here.
"""
import logging
import os
import socket
import uuid
from datetime import datetime, timedelta, timezone
from typing import Callable

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from blackwidow.models import SchedulerLease
from shared.hashing import stable_hash

logger = logging.getLogger(__name__)

LOCK_NAME = "blackwidow.scheduler"


def advisory_key(name: str) -> int:
    """pg_advisory_lock takes a signed bigint; derive it from a stable hash of the name."""
    value = stable_hash(name)
    return value - 2 ** 64 if value >= 2 ** 63 else value


def holder_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class AdvisoryLock:
    """Session-level pg_try_advisory_lock on a connection kept for the process lifetime. PostgreSQL
    frees the lock when that connection ends, so a dead scheduler never blocks its successor."""

    def __init__(self, engine: sa.Engine, name: str = LOCK_NAME):
        self._engine = engine
        self._key = advisory_key(name)
        self._conn: sa.Connection | None = None
        self._held = False

    def try_acquire(self) -> bool:
        if self._held:
            return self.still_held()
        try:
            if self._conn is None:
                # autocommit: holding a session lock must not leave a transaction open for hours
                self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._held = bool(self._conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"),
                                                 {"k": self._key}).scalar())
        except sa_exc.DBAPIError:
            logger.warning("scheduler.lock_error", exc_info=True)
            self._reset()
        return self._held

    def still_held(self) -> bool:
        if not self._held or self._conn is None:
            return False
        try:
            # the lock lives exactly as long as this session: if the session answers, we hold it
            self._conn.execute(sa.text("SELECT 1"))
            return True
        except sa_exc.DBAPIError:
            logger.warning("scheduler.lock_lost", exc_info=True)
            self._reset()
            return False

    def release(self) -> None:
        if self._conn is not None and self._held:
            try:
                self._conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": self._key})
            except sa_exc.DBAPIError:
                pass
        self._reset()

    def _reset(self) -> None:
        self._held = False
        if self._conn is not None:
            try:
                self._conn.close()
            except sa_exc.DBAPIError:
                pass
            self._conn = None


class LeaseLock:
    """A row with a holder and an expiry, renewed on every tick; a successor takes over once it expires."""

    def __init__(self, sessionmaker, ttl_s: float, *, name: str = "scheduler", holder: str | None = None,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)):
        self._maker = sessionmaker
        self._ttl = timedelta(seconds=ttl_s)
        self._name = name
        self.holder = holder or holder_id()
        self._now = now

    def try_acquire(self) -> bool:
        at = self._now()
        values = {"holder": self.holder, "expires_at": at + self._ttl}
        try:
            with self._maker.begin() as session:
                taken = session.execute(
                    sa.update(SchedulerLease)
                    .where(SchedulerLease.name == self._name,
                           sa.or_(SchedulerLease.holder == self.holder, SchedulerLease.expires_at < at))
                    .values(**values)).rowcount
                if taken:
                    return True
                if session.get(SchedulerLease, self._name) is not None:
                    return False
                session.add(SchedulerLease(name=self._name, **values))
            return True
        except sa_exc.IntegrityError:
            return False                 # another scheduler inserted the row first
        except sa_exc.DBAPIError:
            logger.warning("scheduler.lease_error", exc_info=True)
            return False

    still_held = try_acquire

    def release(self) -> None:
        try:
            with self._maker.begin() as session:
                session.execute(sa.delete(SchedulerLease).where(SchedulerLease.name == self._name,
                                                                SchedulerLease.holder == self.holder))
        except sa_exc.DBAPIError:
            logger.warning("scheduler.lease_release_failed", exc_info=True)


def make_lock(sessionmaker, ttl_s: float):
    engine = sessionmaker.kw["bind"]
    if engine.dialect.name == "postgresql":
        return AdvisoryLock(engine)
    return LeaseLock(sessionmaker, ttl_s)
