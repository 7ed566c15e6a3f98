"""Gunicorn settings for `blackwidow serve`: several sync workers, no preload (each worker builds its
own engine after the fork). BW_BIND / BW_WORKERS set address and worker count; the CLI's --bind and
--workers override them. Request metrics are shared across workers through a Prometheus
multiprocess directory under BW_DATA_DIR, removed when the server stops, and served only on the
BW_METRICS_PORT listener (shared/metrics_listener.py)."""
import os
import shutil

from blackwidow.metrics_dir import PREFIX, remove_dead_servers_dirs
from shared.metrics_listener import add_metrics_listener

bind = os.environ.get("BW_BIND", "127.0.0.1:8700")
workers = int(os.environ.get("BW_WORKERS", "3"))
worker_class = "sync"
preload_app = False
wsgi_app = "blackwidow.app:get_app()"
timeout = 30
graceful_timeout = 10
accesslog = None
errorlog = "-"
loglevel = "warning"

# Must be in the environment before any worker imports prometheus_client.
_data_dir = os.environ.get("BW_DATA_DIR") or ".run/data"
_metrics_dir = os.environ.setdefault(
    "PROMETHEUS_MULTIPROC_DIR", os.path.abspath(os.path.join(_data_dir, f"{PREFIX}.{os.getpid()}")))


def on_starting(server):
    add_metrics_listener(server)          # /metrics only there: BW_METRICS_ADDR:BW_METRICS_PORT
    shutil.rmtree(_metrics_dir, ignore_errors=True)
    remove_dead_servers_dirs(os.path.dirname(_metrics_dir))
    os.makedirs(_metrics_dir, exist_ok=True)


def child_exit(server, worker):
    from prometheus_client import multiprocess
    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    shutil.rmtree(_metrics_dir, ignore_errors=True)
