"""Liveness that does not depend on how long a tick takes (docs/coordination.md, "Liveness").

A spawn detaches (drops all its work) when it hears nothing from the hub for BW_DETACH_AFTER_S, and drops a
subscription the hub has not named for BW_ORPHAN_AFTER_S. Ticks run one after another, and a reload, a
placement or a first tick after a restart at scale can take longer than either. While this scheduler leads,
a thread of its own tells every live node of the last snapshot that the hub is alive, every `interval_s`,
whatever the tick is doing: a tiny POST /v1/keepalive, on its own HTTP session and threads. A keepalive
refreshes what the node's last poll named; it never counts towards a node's liveness (polls do that).
"""
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping

from blackwidow.spawn_client import SpawnClient, SpawnError
from shared.config import HubConfig
from shared.http import make_session

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
    """The keepalive thread of a leading scheduler, on HTTP connections of its own with short timeouts (a
    busy tick must not hold them up). Set the returned event to stop it."""
    client = SpawnClient(make_session(user_agent, pool_size=MAX_WORKERS), config.node_secret, timeout=(1.0, 2.0))
    stop = threading.Event()
    thread = threading.Thread(target=run, name="bw-keepalive", daemon=True, kwargs={
        "client": client, "nodes": nodes, "stop": stop, "on_round": on_round,
        "interval_s": interval_for(config.poll_interval_s, config.detach_after_s, config.orphan_after_s)})
    thread.start()
    return thread, stop
