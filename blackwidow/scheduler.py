"""`blackwidow scheduler`: the single coordination process. Wires leadership, APScheduler and poll_once.

Run exactly one per deployment; a second copy waits as a standby and takes over when the first dies.
Never run inside the API's gunicorn workers. Metrics: BW_SCHEDULER_METRICS_PORT (unset = off),
bound to BW_SCHEDULER_METRICS_ADDR (default 127.0.0.1).
"""
import logging
import os
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Callable

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.blocking import BlockingScheduler
from prometheus_client import start_http_server

from sqlalchemy.exc import SQLAlchemyError

from blackwidow import budget_rounds, fencing, keepalive, leadership, migrate
from blackwidow.db import make_sessionmaker
from blackwidow.metrics import SchedulerMetrics
from blackwidow.poller import PollerState, poll_once
from blackwidow.spawn_client import SpawnClient
from blackwidow.store.coordination import live_node_urls
from shared.config import HubConfig, get
from shared.http import CLUSTER_HOSTS, make_session
from shared.logging import setup_logging

logger = logging.getLogger(__name__)

USER_AGENT = "BlackWidow-hub/0.1"


def lease_ttl_s(poll_interval_s: float) -> float:
    # long enough to outlast a slow tick (node timeouts), short enough for a quick takeover
    return max(30.0, 5 * poll_interval_s)


def live_nodes(sessionmaker) -> Callable[[], dict[str, str]]:
    """Whom the keepalives go to: the live nodes as the database has them at each call, not as the last tick
    read them. A node that registers in the middle of a long tick has its first poll only at the next tick,
    and would detach before it if nothing told it the hub is alive. On a database error: the last list."""
    last: dict[str, str] = {}

    def read() -> dict[str, str]:
        nonlocal last
        try:
            with sessionmaker() as session:
                last = live_node_urls(session)
        except SQLAlchemyError:
            logger.warning("keepalive.nodes_unread", exc_info=True)
        return last

    return read


def run_as_leader(lock, tick, interval_s: float, stop: threading.Event) -> None:
    """Run `tick` now and every interval_s while `lock` is held; return when it is lost or on `stop`."""
    scheduler = BlockingScheduler(executors={"default": ThreadPoolExecutor(1)}, timezone=timezone.utc)

    def job() -> None:
        if stop.is_set():
            scheduler.shutdown(wait=False)
            return
        if not lock.still_held():
            logger.error("scheduler.lock_lost")
            scheduler.shutdown(wait=False)
            return
        try:
            tick()
        except fencing.LeadershipLost as exc:
            # another scheduler claimed a newer epoch: this one wrote nothing since, and stops here
            logger.error("scheduler.deposed", extra={"error": str(exc)})
            scheduler.shutdown(wait=False)
        except Exception:
            logger.exception("scheduler.tick_failed")

    scheduler.add_job(job, "interval", seconds=interval_s, id="poll", max_instances=1, coalesce=True,
                      misfire_grace_time=None, next_run_time=datetime.now(timezone.utc))
    scheduler.start()


# a budget round waits this long for a node: one that hangs delays the next tick by a second at most, once (the
# rounds skip it until that tick, whose poll decides what its silence means; a poll waits for it far longer)
ROUND_TIMEOUT = (0.5, 1.0)


def tick_and_rounds(sessionmaker, client: SpawnClient, round_client: SpawnClient, config: HubConfig,
                    state: PollerState, metrics: SchedulerMetrics) -> None:
    """A tick, then budget rounds (blackwidow.budget_rounds) until shortly before the next tick is due: a round
    still running then would make APScheduler skip that tick."""
    began = time.monotonic()
    result = poll_once(sessionmaker, client, config, state=state, metrics=metrics)
    deadline = began + config.poll_interval_s - max(config.budget_round_s, 0.1 * config.poll_interval_s)
    metrics.budget_rounds.inc(budget_rounds.run(sessionmaker, round_client, config, state, deadline=deadline,
                                                nudged=result.nudged))


def _step_down(sessionmaker, lock, state: PollerState, stop: threading.Event) -> None:
    """After leading: on a clean stop say so (no holder: /health stops reporting a leader); when deposed
    or the lock was lost, give the lock up so this process rejoins as a standby."""
    if stop.is_set() and state.fence is not None:
        try:
            with sessionmaker.begin() as session:
                fencing.release(session, state.fence)
        except Exception:
            logger.warning("scheduler.release_failed", exc_info=True)
    if not stop.is_set():
        lock.release()


def wait_for_schema(database_url: str, stop: threading.Event, interval_s: float) -> bool:
    """Wait until the database is at this package's migration head; False if stopped first.

    `blackwidow serve` migrates as it starts, and the scheduler usually starts beside it: acting on a
    schema still being created (or one an older or newer release left) would fail every tick."""
    want = migrate.head()
    logged: tuple | None = None
    while not stop.is_set():
        try:
            have = migrate.current(database_url)
        except Exception as exc:           # database not up yet: the same wait, a different reason
            have, reason = None, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        else:
            if have == want:
                return True
            reason = "not migrated"
        if logged != (have, reason):
            logger.warning("scheduler.waiting_for_schema",
                           extra={"expected": want, "current": have, "reason": reason})
            logged = (have, reason)
        stop.wait(interval_s)
    return False


def serve(config: HubConfig, stop: threading.Event, metrics: SchedulerMetrics) -> None:
    if not wait_for_schema(config.database_url, stop, config.poll_interval_s):
        return
    sessionmaker = make_sessionmaker(config.database_url)
    lock = leadership.make_lock(sessionmaker, lease_ttl_s(config.poll_interval_s))
    # connections kept to every spawn: a thousand spawns polled in turn through a pool of 32 hosts' connections
    # opened a new one per request, and the closed ones filled the ephemeral ports (bench.hub_scale)
    client = SpawnClient(make_session(USER_AGENT, pool_size=32, hosts=CLUSTER_HOSTS), config.node_secret)
    round_client = SpawnClient(make_session(USER_AGENT, pool_size=budget_rounds.MAX_WORKERS, hosts=CLUSTER_HOSTS),
                               config.node_secret, timeout=ROUND_TIMEOUT)
    standby_logged = False
    try:
        while not stop.is_set():
            if not lock.try_acquire():
                if not standby_logged:
                    logger.info("scheduler.standby", extra={"pid": os.getpid()})
                    standby_logged = True
                stop.wait(config.poll_interval_s)
                continue
            standby_logged = False
            metrics.leader.set(1)
            logger.info("scheduler.leader", extra={"interval_s": config.poll_interval_s})
            state = PollerState()        # a new leader claims an epoch and learns the node set from the database
            alive, leading = keepalive.start(config, USER_AGENT, live_nodes(sessionmaker), metrics.keepalive_round)
            try:
                run_as_leader(lock, lambda: tick_and_rounds(sessionmaker, client, round_client, config, state,
                                                            metrics),
                              config.poll_interval_s, stop)
            finally:
                leading.set()
                alive.join(10)
            metrics.leader.set(0)
            _step_down(sessionmaker, lock, state, stop)
    finally:
        lock.release()
        sessionmaker.kw["bind"].dispose()


def main(argv: list[str] | None = None) -> int:
    config = HubConfig.from_env()
    setup_logging(config.log_json, config.log_level)
    # APScheduler logs every run at INFO; its warnings (a tick overrunning the interval) still show
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    metrics = SchedulerMetrics()
    port = get(os.environ, "BW_SCHEDULER_METRICS_PORT", int, None)
    if port is not None:
        start_http_server(port, addr=get(os.environ, "BW_SCHEDULER_METRICS_ADDR", str, "127.0.0.1"),
                          registry=metrics.registry)
    stop = threading.Event()
    # the leader notices at its next tick, the standby at once; either then releases the lock
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    serve(config, stop, metrics)
    logger.info("scheduler.stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
