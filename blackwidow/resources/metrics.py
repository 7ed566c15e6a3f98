"""GET /metrics (no auth): Prometheus text."""
from prometheus_client import CONTENT_TYPE_LATEST

from blackwidow.api_metrics import render, store_registry


class MetricsResource:
    auth_exempt = True

    def __init__(self, maker):
        self._store = store_registry(maker)

    def on_get(self, req, resp) -> None:
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = render(self._store)
