"""Liveness that does not depend on how long a tick takes (docs/coordination.md, "Liveness").

A spawn detaches (drops all its work) when it hears nothing from the hub for BW_DETACH_AFTER_S, and drops a
subscription the hub has not named for BW_ORPHAN_AFTER_S. Ticks run one after another, and a reload, a
placement or a first tick after a restart at scale can take longer than either. While this scheduler leads,
a process of its own tells every live node (as the database has it) that the hub is alive, every `interval_s`,
whatever the tick is doing: a tiny POST /v1/keepalive, on its own HTTP session. A process, not a thread:
a tick at a million subscriptions keeps the scheduler's interpreter lock busy for minutes (32 send threads
encoding batches, passes over every row), and keepalive threads sharing it were late enough for spawns to
detach. A thread of the scheduler only tells the process which nodes to keep alive when that changes, and
relays its rounds to the metrics. A keepalive refreshes what the node's last poll named; it never counts
towards a node's liveness (polls do that).
"""
import logging
import multiprocessing
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Callable, Mapping

from blackwidow.spawn_client import SpawnClient, SpawnError
from shared.config import HubConfig
from shared.http import CLUSTER_HOSTS, make_session

logger = logging.getLogger(__name__)

MAX_WORKERS = 16


def interval_for(poll_interval_s: float, detach_after_s: float, orphan_after_s: float) -> float:
    """Often enough that two keepalives in a row may be lost before a node detaches or orphans anything."""
    return max(0.2, min(poll_interval_s, detach_after_s / 3, orphan_after_s / 3))


def run(client: SpawnClient, nodes: Callable[[], Mapping[str, str]], interval_s: float,
        stop: threading.Event, *, on_round: Callable[[int, int], None] | None = None) -> None:
    """Until `stop`: every `interval_s`, POST /v1/keepalive to each node in `nodes()` ({id: url}) at once.
    `on_round(sent, failed)` after each round (metrics, tests)."""
    with ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="bw-keepalive") as pool:
        while not stop.is_set():
            began = time.monotonic()
            targets = dict(nodes())

            def send(url: str) -> bool:
                try:
                    client.keepalive(url)
                    return True
                except SpawnError:
                    return False          # the tick's polls decide what a silent node means
                except Exception:
                    logger.exception("keepalive.error", extra={"url": url})
                    return False

            results = list(pool.map(send, targets.values()))
            if on_round is not None:
                on_round(len(results), results.count(False))
            stop.wait(max(0.0, interval_s - (time.monotonic() - began)))


def start(config: HubConfig, user_agent: str, nodes: Callable[[], Mapping[str, str]],
          on_round: Callable[[int, int], None] | None = None) -> tuple[threading.Thread, threading.Event]:
    """The keepalives of a leading scheduler, sent by a process of its own on HTTP connections of its own with
    short timeouts (a busy tick must not hold them up). The returned thread, in this process, hands the
    process `nodes()` whenever it changes and passes its rounds to `on_round`; set the returned event to stop
    both (the process also stops when this one dies: its pipe closes)."""
    interval_s = interval_for(config.poll_interval_s, config.detach_after_s, config.orphan_after_s)
    context = multiprocessing.get_context("spawn")      # a fork would copy a scheduler's threads and locks
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve, name="bw-keepalive", daemon=True,
                              args=(theirs, config.node_secret, user_agent, interval_s))
    process.start()
    theirs.close()
    stop = threading.Event()
    thread = threading.Thread(target=_bridge, name="bw-keepalive", daemon=True,
                              args=(ours, process, nodes, on_round, min(interval_s, 0.5), stop))
    thread.start()
    return thread, stop


def _bridge(conn: Connection, process, nodes: Callable[[], Mapping[str, str]],
            on_round: Callable[[int, int], None] | None, every_s: float, stop: threading.Event) -> None:
    """In the scheduler: the node list out when it changes, the rounds in, until `stop`."""
    sent: dict[str, str] | None = None
    try:
        while not stop.is_set():
            targets = dict(nodes())
            if targets != sent:
                conn.send(targets)
                sent = targets
            # the rounds that come in until the list is due again: bounded in time, because rounds as frequent as
            # the wait would otherwise keep the list from ever being read again
            due = time.monotonic() + every_s
            while not stop.is_set() and conn.poll(max(0.0, due - time.monotonic())):
                rounds, failed = conn.recv()
                if on_round is not None:
                    on_round(rounds, failed)
                if time.monotonic() >= due:
                    break
    except (EOFError, OSError):
        process.join(1)
        if process.exitcode in (-signal.SIGTERM, -signal.SIGINT):
            # a stop signal to the scheduler's whole process group (a service manager, a terminal): the
            # scheduler stops at its next tick, an expected end, not a fault
            logger.info("keepalive.process_stopped", extra={"signal": -process.exitcode})
        else:
            logger.error("keepalive.process_lost", extra={"exitcode": process.exitcode})
    finally:
        try:
            conn.send(None)
        except (OSError, ValueError):
            pass
        process.join(10)
        if process.is_alive():
            process.terminate()
        conn.close()


def _serve(conn: Connection, secret: str, user_agent: str, interval_s: float) -> None:
    """The keepalive process: rounds to the latest node list it was given, until told to stop or its
    scheduler goes (the pipe closes)."""
    client = SpawnClient(make_session(user_agent, pool_size=MAX_WORKERS, hosts=CLUSTER_HOSTS), secret,
                         timeout=(1.0, 2.0))
    targets: list[dict[str, str]] = [{}]       # replaced whole, never changed in place: read by another thread
    stop = threading.Event()

    def listen() -> None:
        try:
            while True:
                message = conn.recv()
                if message is None:
                    break
                targets[0] = message
        except (EOFError, OSError):
            pass
        stop.set()

    threading.Thread(target=listen, name="bw-keepalive-listen", daemon=True).start()

    def report(sent: int, failed: int) -> None:
        try:
            conn.send((sent, failed))
        except (OSError, ValueError):
            stop.set()

    run(client, lambda: targets[0], interval_s, stop, on_round=report)
