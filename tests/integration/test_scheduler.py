"""Exactly one scheduler acts: the PostgreSQL advisory lock, the SQLite lease, and real scheduler
processes (standby, takeover after the leader is killed, adoption without restarts)."""
import signal
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from blackwidow import migrate
from blackwidow.db import make_sessionmaker
from blackwidow.leadership import AdvisoryLock, LeaseLock
from blackwidow.metrics import SchedulerMetrics
from blackwidow.scheduler import serve
from tests.integration.coordination_support import (SECRET, LoggedProcess, add_subscriptions, db_url,  # noqa: F401
                                                    expected_routes, free_port, held, hub_config, maker, register,
                                                    spawns, wait_for)

pytestmark = pytest.mark.integration


def test_advisory_lock_admits_one_holder_and_frees_with_its_session(db_url):
    name = f"test-lock-{uuid.uuid4().hex}"
    engine = sa.create_engine(db_url)
    first, second = AdvisoryLock(engine, name), AdvisoryLock(engine, name)
    try:
        assert first.try_acquire() and first.try_acquire()          # re-acquiring is a renewal
        assert not second.try_acquire()
        first.release()
        assert second.try_acquire()
        # the holder's session dies (say its host vanished): the lock goes with it
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_locks "
                                 "WHERE locktype = 'advisory' AND pid <> pg_backend_pid()"))
        assert not second.still_held()
        assert first.try_acquire()
    finally:
        first.release()
        second.release()
        engine.dispose()


def test_sqlite_lease_admits_one_holder_until_it_expires(tmp_path):
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    migrate.upgrade(url)
    maker = make_sessionmaker(url)
    clock = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    first = LeaseLock(maker, 30, holder="a", now=lambda: clock[0])
    second = LeaseLock(maker, 30, holder="b", now=lambda: clock[0])
    try:
        assert first.try_acquire() and not second.try_acquire()
        clock[0] += timedelta(seconds=20)
        assert first.still_held() and not second.try_acquire()      # renewed at 20 s: good until 50 s
        clock[0] += timedelta(seconds=31)
        assert second.try_acquire() and not first.still_held()       # expired: taken over
        second.release()
        assert first.try_acquire()
    finally:
        maker.kw["bind"].dispose()


def leading(metrics: SchedulerMetrics) -> bool:
    return metrics.registry.get_sample_value("bw_hub_scheduler_leader") == 1


def test_two_schedulers_on_sqlite_take_turns(tmp_path, spawns):
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    migrate.upgrade(url)
    maker = make_sessionmaker(url)
    doubles = spawns(1)
    register(maker, doubles)
    add_subscriptions(maker, 5)
    config = hub_config(url, BW_POLL_INTERVAL_S="0.2")
    runs = []
    for _ in range(2):
        stop, metrics = threading.Event(), SchedulerMetrics()
        thread = threading.Thread(target=serve, args=(config, stop, metrics), daemon=True)
        thread.start()
        runs.append((stop, metrics, thread))
        wait_for(lambda: sum(leading(m) for _, m, _ in runs) == 1, 5)
    try:
        wait_for(lambda: len(doubles[0].subs) == 5, 5)
        time.sleep(0.5)                          # the standby has tried by now, more than once
        assert sum(leading(m) for _, m, _ in runs) == 1
        leader = next(r for r in runs if leading(r[1]))
        standby = next(r for r in runs if r is not leader)
        leader[0].set()
        leader[2].join(5)
        # a clean stop releases the lease: the standby takes over at its next check
        wait_for(lambda: leading(standby[1]), 3)
    finally:
        for stop, _, thread in runs:
            stop.set()
            thread.join(5)
        maker.kw["bind"].dispose()


def test_scheduler_started_before_the_migrations_waits_for_them(tmp_path, spawns, caplog):
    # `blackwidow serve` migrates as it starts; a scheduler started beside it must not act on a
    # half-made schema (each tick would fail) but lead once the schema is at head
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    config = hub_config(url, BW_POLL_INTERVAL_S="0.2")
    stop, metrics = threading.Event(), SchedulerMetrics()
    thread = threading.Thread(target=serve, args=(config, stop, metrics), daemon=True)
    with caplog.at_level("WARNING", logger="blackwidow.scheduler"):
        thread.start()
        try:
            wait_for(lambda: any(r.msg == "scheduler.waiting_for_schema" for r in caplog.records), 5)
            time.sleep(0.5)
            assert not leading(metrics)
            migrate.upgrade(url)
            maker = make_sessionmaker(url)
            doubles = spawns(1)
            register(maker, doubles)
            add_subscriptions(maker, 3)
            wait_for(lambda: len(doubles[0].subs) == 3, 10)
            assert leading(metrics)
            maker.kw["bind"].dispose()
        finally:
            stop.set()
            thread.join(5)
    assert not thread.is_alive()
    waits = [r for r in caplog.records if r.msg == "scheduler.waiting_for_schema"]
    assert len(waits) == 1 and waits[0].expected == migrate.head() and waits[0].current is None
    assert not [r for r in caplog.records if r.msg == "scheduler.tick_failed"]


def scheduler_process(db_url: str, log: Path, **env) -> LoggedProcess:
    return LoggedProcess([sys.executable, "-m", "blackwidow.scheduler"],
                         {"BW_DATABASE_URL": db_url, "BW_NODE_SECRET": SECRET, "BW_ADMIN_TOKEN": "admin",
                          "BW_POLL_INTERVAL_S": "0.3", "BW_LOG_JSON": "true", "BW_LOG_LEVEL": "INFO",
                          "BW_DATA_DIR": str(log.parent), **env}, log)


def test_second_scheduler_stands_by_and_takes_over_without_restarting_anything(maker, spawns, db_url, tmp_path):
    doubles = spawns(2)
    register(maker, doubles)
    add_subscriptions(maker, 40)
    want = expected_routes(maker, [d.node_id for d in doubles])
    metrics_port = free_port()
    first = scheduler_process(db_url, tmp_path / "first.log", BW_SCHEDULER_METRICS_PORT=str(metrics_port))
    second = None
    try:
        wait_for(lambda: held(doubles) == want, 15)
        assert "scheduler.leader" in first.events()
        second = scheduler_process(db_url, tmp_path / "second.log")
        wait_for(lambda: "scheduler.standby" in second.events(), 10)

        for d in doubles:
            d.reset_counts()
        time.sleep(1.5)
        polls = doubles[0].requests.count(("POST", "/v1/status"))      # keepalives come besides
        assert 3 <= polls <= 7, polls          # one scheduler at 0.3 s: about 5; two would make about 10
        text = requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
        assert "bw_hub_scheduler_leader 1.0" in text and 'bw_hub_polls_total{result="ok"}' in text

        for d in doubles:
            d.reset_counts()
        killed = time.monotonic()
        first.stop(signal.SIGKILL)
        wait_for(lambda: "scheduler.leader" in second.events(), 10)
        wait_for(lambda: all(d.count("POST") >= 1 for d in doubles), 10)
        takeover = time.monotonic() - killed
        time.sleep(1.0)
        print(f"\nleader killed -> standby polling: {takeover:.2f} s")
        assert sum(d.sent() for d in doubles) == 0          # adopted, nothing restarted
        assert held(doubles) == want
        assert second.stop() == 0 and "scheduler.stopped" in second.events()
    finally:
        first.stop(signal.SIGKILL)
        if second is not None:
            second.stop(signal.SIGKILL)
