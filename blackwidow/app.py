"""The hub's admin API: create_app() wires resources to a sessionmaker; get_app() is gunicorn's entry.

Run as `gunicorn 'blackwidow.app:get_app()'` (what `blackwidow serve` does). The REST workers only
read and write the store; they never call spawns.
"""
import falcon
from sqlalchemy.orm import sessionmaker as Sessionmaker

from blackwidow.auth import HubAuth
from blackwidow.db import SessionMiddleware, make_sessionmaker
from blackwidow.api_metrics import MetricsMiddleware
from blackwidow.resources.dashboard import DashboardPageResource, DashboardResource, RootResource
from blackwidow.resources.feeds import FeedsResource
from blackwidow.resources.health import HealthResource
from blackwidow.resources.identities import IdentitiesResource
from blackwidow.resources.metrics import MetricsResource
from blackwidow.resources.nodes import NodesResource
from blackwidow.resources.openapi import OpenApiResource
from blackwidow.resources.sets import SetsResource
from blackwidow.resources.subscriptions import SubscriptionsResource
from blackwidow.resources.tenants import TenantsResource
from shared.config import HubConfig
from shared.http_errors import register_error_handlers
from shared.logging import setup_logging
from shared.metrics_listener import metrics_port


def create_app(config: HubConfig, *, sessionmaker: Sessionmaker, metrics_port: int | None = None) -> falcon.App:
    """`metrics_port`: the listener /metrics answers on (shared/metrics_listener.py); None = nowhere."""
    app = falcon.App(middleware=(
        MetricsMiddleware(),
        HubAuth(admin_token=config.admin_token, node_secret=config.node_secret),
        SessionMiddleware(sessionmaker),
    ))
    register_error_handlers(app)

    tenants = TenantsResource(max_body_bytes=config.max_body_bytes)
    app.add_route("/v1/tenants", tenants)
    app.add_route("/v1/tenants/{tenant_id:uuid}", tenants, suffix="item")

    subscriptions = SubscriptionsResource(max_body_bytes=config.max_body_bytes,
                                          wiki_allowlist=config.wiki_allowlist,
                                          census_every_s=config.census_interval_s)
    app.add_route("/v1/subscriptions", subscriptions)
    app.add_route("/v1/subscriptions/bulk", subscriptions, suffix="bulk")
    app.add_route("/v1/subscriptions/{sub_id:uuid}", subscriptions, suffix="item")

    nodes = NodesResource(config)
    app.add_route("/v1/feeds", FeedsResource())
    sets = SetsResource(max_body_bytes=config.max_body_bytes, census_every_s=config.census_interval_s)
    app.add_route("/v1/sets", sets)
    app.add_route("/v1/sets/{set_id:uuid}", sets, suffix="item")
    app.add_route("/v1/nodes", nodes)
    app.add_route("/v1/nodes/{node_id:uuid}", nodes, suffix="item")

    identities = IdentitiesResource(max_body_bytes=config.max_body_bytes, wiki_allowlist=config.wiki_allowlist)
    app.add_route("/v1/identities", identities)
    app.add_route("/v1/identities/{identity_id}", identities, suffix="item")

    app.add_route("/health", HealthResource(sessionmaker, poll_interval_s=config.poll_interval_s))
    app.add_route("/metrics", MetricsResource(sessionmaker, port=metrics_port))
    app.add_route("/openapi.json", OpenApiResource())

    page = DashboardPageResource()
    app.add_route("/", RootResource())
    app.add_route("/dashboard", page)
    app.add_route("/dashboard/{name}", page, suffix="asset")
    app.add_route("/v1/dashboard", DashboardResource(config))
    return app


def get_app() -> falcon.App:
    """Config from BW_* variables; runs inside each gunicorn worker (after the fork)."""
    config = HubConfig.from_env()
    setup_logging(config.log_json, config.log_level)
    return create_app(config, sessionmaker=make_sessionmaker(config.database_url), metrics_port=metrics_port())
