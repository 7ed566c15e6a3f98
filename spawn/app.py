"""The spawn's WSGI app: create_app(node, secret) wires routes; get_app() builds everything from
BW_* inside the gunicorn worker (after the fork) and starts the background threads there."""
import logging
import threading
from functools import partial

import falcon

from shared.config import SpawnConfig
from shared.http import make_session
from shared.http_auth import BearerAuth
from shared.http_errors import register_error_handlers
from shared.logging import setup_logging
from shared.metrics_listener import metrics_port
from shared.revisions.store import RevisionStore
from spawn.catch_up import CatchUpReaders
from spawn.census_shards import ShardProvers
from spawn.category_members import MembersReaders
from spawn.dump_duties import DumpRunners
from spawn.hub_client import HubClient
from spawn.metrics import SpawnMetrics
from spawn.feed_reader import FeedReaders
from spawn.node import Node
from spawn.registry import Registry
from spawn.resources.budgets import BudgetsResource
from spawn.resources.changes import ChangesResource
from spawn.resources.health import HealthResource, MetricsResource
from spawn.resources.keepalive import KeepaliveResource
from spawn.resources.status import StatusResource
from spawn.resources.subscriptions import SubscriptionsResource
from spawn.upstream_budget import UpstreamBudgets
from spawn.wiki_auth import WikiAuth, load_credentials
from spawn.wiki_session import wiki_session
from spawn.wikis import Wikis

logger = logging.getLogger(__name__)


def create_app(node: Node, *, secret: str, metrics_port: int | None = None) -> falcon.App:
    """`metrics_port`: the listener /metrics answers on (shared/metrics_listener.py); None = nowhere."""
    app = falcon.App(middleware=[BearerAuth(secret)])
    register_error_handlers(app)
    app.add_route("/v1/subscriptions", SubscriptionsResource(node))
    app.add_route("/v1/status", StatusResource(node))
    app.add_route("/v1/keepalive", KeepaliveResource(node))
    app.add_route("/v1/changes", ChangesResource(node))
    app.add_route("/v1/budgets", BudgetsResource(node))
    app.add_route("/health", HealthResource(node))
    app.add_route("/metrics", MetricsResource(node, port=metrics_port))
    return app


def build_node(config: SpawnConfig, *, store: RevisionStore, metrics: SpawnMetrics | None = None) -> Node:
    metrics = metrics or SpawnMetrics()
    http = wiki_session(config.user_agent, config.wiki_allowlist)     # refuses a generic BW_USER_AGENT
    auth = WikiAuth(load_credentials(config.credentials_file), anonymous=http,
                    make_session=lambda: wiki_session(config.user_agent, config.wiki_allowlist))
    budgets = UpstreamBudgets(skew_s=config.max_clock_skew_s)
    wikis = Wikis(config, http=http, store=store, metrics=metrics, budgets=budgets, auth=auth)
    feeds = FeedReaders(wikis.client, metrics)
    # dump hosts go through the wikis' check of internal addresses (and their User-Agent rule): a session of
    # their own, so that a dump's long download never holds a wiki connection; each file is walked in a child
    # process (beside this one's writing, on another core), which makes that session itself
    dump_session = partial(wiki_session, config.user_agent, config.wiki_allowlist, pool_size=2)
    dumps = DumpRunners(store, None, metrics, max_running=config.dump_files_per_node, session_factory=dump_session)
    registry = Registry(wikis.make_source, orphan_after_s=config.orphan_after_s,
                        clock_skew_s=config.max_clock_skew_s)
    hub = HubClient(make_session(config.user_agent, pool_size=2), config.hub_url, config.node_secret,
                    timeout=(5.0, 10.0))
    return Node(registry, hub, advertise_url=config.advertise_url, detach_after_s=config.detach_after_s,
                metrics=metrics, budgets=budgets, feeds=feeds, followed=wikis.followed, dumps=dumps,
                catch_up=CatchUpReaders(wikis.client, store), members=MembersReaders(wikis.client),
                census=ShardProvers(wikis.client, store))


_lock = threading.Lock()
_node: Node | None = None
_store: RevisionStore | None = None
_app: falcon.App | None = None


def get_app() -> falcon.App:
    """Gunicorn's entry point ('spawn.app:get_app()'): one node per worker process."""
    global _node, _store, _app
    with _lock:
        if _app is None:
            from shared.revisions.factory import open_store     # imports cassandra only when configured
            config = SpawnConfig.from_env()
            setup_logging(config.log_json, config.log_level)
            _store = open_store(config)
            _node = build_node(config, store=_store)
            _node.start()
            _app = create_app(_node, secret=config.node_secret, metrics_port=metrics_port())
            logger.info("spawn.started", extra={"advertise_url": config.advertise_url, "hub": config.hub_url})
        return _app


def shutdown() -> None:
    """Called from gunicorn's worker_exit hook: stop sources before the process goes."""
    with _lock:
        if _node is not None:
            _node.shutdown()
        if _store is not None:
            _store.close()
