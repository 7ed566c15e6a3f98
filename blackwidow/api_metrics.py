"""Prometheus metrics of the hub API: request counts and latency per route, and gauges read from the
store at scrape time. Under gunicorn the request metrics are aggregated across workers through
PROMETHEUS_MULTIPROC_DIR (set by blackwidow/gunicorn_conf.py). No label ever carries a secret."""
import logging
import os
import time

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from blackwidow.dump_plan import FILE_STATES
from blackwidow.quota.store import tenant_quota_rows
from blackwidow.representations import dump_progress
from blackwidow.store.dumps import list_sets
from blackwidow.store.stats import store_counts
from shared.dump_wire import parse_time

logger = logging.getLogger(__name__)

REQUESTS = Counter("bw_hub_http_requests_total", "Admin API requests.", ["method", "route", "status"])
LATENCY = Histogram("bw_hub_http_request_seconds", "Admin API request latency.", ["method", "route"])


class MetricsMiddleware:
    def process_request(self, req, resp) -> None:
        req.context.started = time.perf_counter()

    def process_response(self, req, resp, resource, req_succeeded) -> None:
        route = req.uri_template or "unmatched"
        status = str(resp.status)[:3] if resp.status else "500"
        REQUESTS.labels(req.method, route, status).inc()
        started = getattr(req.context, "started", None)
        if started is not None:
            LATENCY.labels(req.method, route).observe(time.perf_counter() - started)


# a set subscription's dump bootstrap, as GET /v1/sets/{id} shows its `progress`
_DUMP_GAUGES = (("revisions_written", "revisions_written",
                 "Revisions its dump files wrote (up to each file's resume point)."),
                ("revisions_read", "revisions_read", "Revisions the current readings of its files parsed."),
                ("bytes_read", "bytes_read", "Compressed bytes of its files read by their current readings."),
                ("bytes_total", "bytes_total", "Compressed size of its files, once every size is known."),
                ("revisions_per_s", "revisions_per_second", "Revisions per second over the files being read."),
                ("eta_s", "eta_seconds", "Seconds left at the current byte rate, once every file's size is known."))


class StoreCollector:
    """Gauges counted in the database, so every worker reports the same numbers."""

    def __init__(self, maker):
        self._maker = maker

    def describe(self):
        return []      # keeps registration from querying the database

    def collect(self):
        up = GaugeMetricFamily("bw_hub_database_up", "1 when the configuration store answers.")
        subs = GaugeMetricFamily("bw_hub_subscriptions", "Subscriptions by state.", labels=["state"])
        nodes = GaugeMetricFamily("bw_hub_nodes", "Spawn nodes by state.", labels=["state"])
        tenants = GaugeMetricFamily("bw_hub_tenants", "Tenants.")
        quota = GaugeMetricFamily("bw_tenant_quota", "Tenant quota in revisions (tenants with a quota).",
                                  labels=["tenant", "name"])
        used = GaugeMetricFamily("bw_tenant_used", "Revisions delivered over the tenant's subscriptions.",
                                 labels=["tenant", "name"])
        leased = GaugeMetricFamily("bw_tenant_leased", "Quota leased to spawns and not delivered yet.",
                                   labels=["tenant", "name"])
        sets = [GaugeMetricFamily(f"bw_set_dump_{name}", text, labels=["set"]) for _, name, text in _DUMP_GAUGES]
        files = GaugeMetricFamily("bw_set_dump_files", "A set subscription's dump files by state.",
                                  labels=["set", "state"])
        lag = GaugeMetricFamily("bw_set_catch_up_lag_seconds", "Seconds from a set's caught_up_to (every revision "
                                "up to it is stored) to now, once its catch-up first reached the present.",
                                labels=["set"])
        census = GaugeMetricFamily("bw_set_census_shards", "A set's shards at its last census: proven (the stored "
                                   "history equals the wiki's up to the cut) or not.", labels=["set", "state"])
        census_age = GaugeMetricFamily("bw_set_census_age_seconds", "Seconds since a set's last census ended.",
                                       labels=["set"])
        try:
            with self._maker() as session:
                counts = store_counts(session)
                quotas = tenant_quota_rows(session)
                wiki_sets = list_sets(session)
        except Exception:      # a scrape must still answer (with database_up 0) when the store is down
            logger.warning("metrics.store_unavailable", exc_info=True)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        for state, count in sorted(counts["subscriptions"].items()):
            subs.add_metric([state], count)
        for state, count in sorted(counts["nodes"].items()):
            nodes.add_metric([state], count)
        tenants.add_metric([], counts["tenants"])
        for tenant_id, name, limit, delivered, reserved in quotas:
            used.add_metric([tenant_id, name], delivered)
            if limit is not None:
                quota.add_metric([tenant_id, name], limit)
                leased.add_metric([tenant_id, name], max(0, reserved - delivered))
        for view in wiki_sets:
            progress = dump_progress(view.files)
            for gauge, (field, _, _) in zip(sets, _DUMP_GAUGES):
                if progress[field] is not None:
                    gauge.add_metric([view.id], progress[field])
            for state in FILE_STATES:
                files.add_metric([view.id, state], sum(f.state == state for f in view.files))
            if view.catch_up is not None and view.catch_up.caught_up_to is not None:
                lag.add_metric([view.id], max(0.0, time.time() - view.catch_up.caught_up_to.timestamp()))
            last = None if view.catch_up is None else view.catch_up.census_last
            if last is not None and last.finished_at is not None:
                proven = sum(p.proven for p in last.shards)
                census.add_metric([view.id, "proven"], proven)
                census.add_metric([view.id, "unproven"], last.shard_count - proven)
                census_age.add_metric([view.id], max(0.0, time.time() - parse_time(last.finished_at).timestamp()))
        yield from (up, subs, nodes, tenants, quota, used, leased, *sets, files, lag, census, census_age)


def render(store_registry: CollectorRegistry) -> bytes:
    """Prometheus text: this process's (or every worker's) request metrics plus the store gauges."""
    return _request_metrics() + generate_latest(store_registry)


def store_registry(maker) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(maker))
    return registry


def _request_metrics() -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)
