"""GET /health (load balancers, autoscaling): 503 unless registered and hearing from the hub; GET /metrics
(Prometheus). No auth, no secrets."""
import falcon
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

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
    auth_exempt = True

    def __init__(self, node: Node):
        self.node = node

    def on_get(self, req, resp) -> None:
        self.node.report()          # refresh the gauges
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = generate_latest(self.node.metrics.registry)
        resp.status = falcon.HTTP_200
