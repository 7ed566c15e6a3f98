"""Gunicorn settings for a spawn: ONE worker (the registry and fetcher threads live in its memory),
threads for concurrent hub calls, no preload (get_app() runs after the fork). BW_BIND sets the address."""
import os

from shared.metrics_listener import add_metrics_listener

bind = os.environ.get("BW_BIND", "127.0.0.1:8701")
workers = 1
worker_class = "gthread"
threads = int(os.environ.get("BW_SPAWN_THREADS", "8"))
preload_app = False
timeout = 60
# the hub, its keepalive process and its budget rounds keep a connection here between calls (shared.http):
# gunicorn's default of 2 s would close it between two ticks, and a call racing that close fails
keepalive = 30
graceful_timeout = 10
accesslog = None
errorlog = "-"
loglevel = "warning"


def on_starting(server):
    add_metrics_listener(server)          # /metrics only there: BW_METRICS_ADDR:BW_METRICS_PORT


def worker_exit(server, worker):
    from spawn.app import shutdown
    shutdown()


def post_worker_init(worker):
    # The app, its threads and the Cassandra driver's metadata live as long as the process: move them
    # out of the collector's reach, so the full collections a harvest's allocations trigger walk only
    # what the harvest made (7 % less spawn CPU per revision in bench.ingest).
    import gc
    gc.freeze()
