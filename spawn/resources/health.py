"""GET /health (load balancers, autoscaling) and GET /metrics (Prometheus). No auth, no secrets."""
import falcon
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from spawn.node import Node


class HealthResource:
    auth_exempt = True

    def __init__(self, node: Node):
        self.node = node

    def on_get(self, req, resp) -> None:
        resp.media = self.node.health()


class MetricsResource:
    auth_exempt = True

    def __init__(self, node: Node):
        self.node = node

    def on_get(self, req, resp) -> None:
        self.node.report()          # refresh the gauges
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = generate_latest(self.node.metrics.registry)
        resp.status = falcon.HTTP_200
