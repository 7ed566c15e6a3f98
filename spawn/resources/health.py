"""GET /health (load balancers, autoscaling): 503 unless registered and hearing from the hub; GET /metrics
(Prometheus) on the metrics listener only. No auth, no secrets."""
import falcon
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from shared.metrics_listener import on_metrics_listener
from spawn.node import Node


class HealthResource:
    auth_exempt = True

    def __init__(self, node: Node):
        self.node = node

    def on_get(self, req, resp) -> None:
        body = self.node.health()
        if body["status"] != "ok":         # detached, registering or refused (spawn/health.py)
            resp.status = falcon.HTTP_503
        resp.media = body


class MetricsResource:
    """Only on the metrics listener (shared/metrics_listener.py): 404 on the control port the hub and the
    ALB reach."""
    auth_exempt = True

    def __init__(self, node: Node, *, port: int | None):
        self.node = node
        self._port = port

    def on_get(self, req, resp) -> None:
        if not on_metrics_listener(req.env, self._port):
            raise falcon.HTTPNotFound()
        self.node.report()          # refresh the gauges
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = generate_latest(self.node.metrics.registry)
        resp.status = falcon.HTTP_200
