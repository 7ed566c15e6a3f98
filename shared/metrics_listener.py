"""Where /metrics may be read: only on a listener of its own, BW_METRICS_ADDR:BW_METRICS_PORT (address
127.0.0.1 by default; port unset = no metrics), never on the API or control port that the load balancer
and the hub reach. The gunicorn configs add that listener; the resources check the port a request came in
on (gunicorn's SERVER_PORT is the listening socket's, whatever the Host header says)."""
import os
from typing import Mapping

from shared.config import get

DEFAULT_ADDR = "127.0.0.1"


def metrics_port(env: Mapping[str, str] = os.environ) -> int | None:
    return get(env, "BW_METRICS_PORT", int, None)


def metrics_bind(env: Mapping[str, str] = os.environ) -> str | None:
    port = metrics_port(env)
    return None if port is None else f"{get(env, 'BW_METRICS_ADDR', str, DEFAULT_ADDR)}:{port}"


def add_metrics_listener(server) -> None:
    """gunicorn's on_starting hook: listen on the metrics address as well (before sockets are made)."""
    bind = metrics_bind()
    if bind is not None and bind not in server.cfg.bind:
        server.cfg.set("bind", [*server.cfg.bind, bind])


def on_metrics_listener(environ: Mapping[str, str], port: int | None) -> bool:
    """Whether a request arrived on the metrics listener (never, when none is configured)."""
    return port is not None and environ.get("SERVER_PORT") == str(port)
