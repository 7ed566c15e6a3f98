"""GET /metrics: Prometheus text, only on the metrics listener (no auth there; 404 on every other port,
so the ALB and anyone who can reach the admin API never read tenants, quotas or usage)."""
import falcon
from prometheus_client import CONTENT_TYPE_LATEST

from blackwidow.api_metrics import render, store_registry
from shared.metrics_listener import on_metrics_listener


class MetricsResource:
    auth_exempt = True

    def __init__(self, maker, *, port: int | None):
        self._store = store_registry(maker)
        self._port = port

    def on_get(self, req, resp) -> None:
        if not on_metrics_listener(req.env, self._port):
            raise falcon.HTTPNotFound()
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = render(self._store)
