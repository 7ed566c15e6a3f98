"""Fixtures and helpers for the hub coordination tests: a migrated PostgreSQL schema of their own,
spawn doubles on free ports, and rows made through the store."""
import uuid

import pytest
import requests
import sqlalchemy as sa

from blackwidow import migrate, router
from blackwidow.db import make_sessionmaker
from blackwidow.models import Assignment, Subscription, Tenant
from blackwidow.spawn_client import SpawnClient
from blackwidow.store import changes, register_node
from shared.config import HubConfig
from shared.hashing import source_uuid
from tests.integration.spawn_double import SpawnDouble
from tests.support.processes import LoggedProcess, free_port, wait_for  # noqa: F401 - re-exported

SECRET = "node-secret-for-tests"
WIKI = "https://en.wikipedia.org/w/api.php"
TABLES = "assignments, reloads, scheduler_lease, subscriptions, tenants, nodes"


def new_schema_url(postgres_url: str, prefix: str = "coord") -> str:
    """URL of a fresh, empty schema in the session database (its search_path set on every connection)."""
    schema = f"{prefix}_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    engine.dispose()
    return f"{postgres_url}?options=-csearch_path%3D{schema}"


@pytest.fixture(scope="module")
def db_url(postgres_url):
    """A schema of this module's own, migrated to head."""
    url = new_schema_url(postgres_url)
    migrate.upgrade(url)
    return url


@pytest.fixture
def maker(db_url):
    maker = make_sessionmaker(db_url)
    with maker.begin() as session:
        session.execute(sa.text(f"TRUNCATE {TABLES} CASCADE"))
    yield maker
    maker.kw["bind"].dispose()


@pytest.fixture
def spawns():
    started: list[SpawnDouble] = []

    def start(count: int) -> list[SpawnDouble]:
        doubles = [SpawnDouble(SECRET).start() for _ in range(count)]
        started.extend(doubles)
        return doubles

    yield start
    for double in started:
        double.stop()


@pytest.fixture
def client():
    http = requests.Session()
    yield SpawnClient(http, SECRET, timeout=(0.5, 2.0))
    http.close()


def hub_config(db_url: str, **env) -> HubConfig:
    return HubConfig.from_env({"BW_NODE_SECRET": SECRET, "BW_ADMIN_TOKEN": "admin", "BW_DATABASE_URL": db_url,
                               "BW_POLL_INTERVAL_S": "0.3", "BW_NODE_FAILURES": "3", **env})


def register(maker, doubles: list[SpawnDouble]) -> None:
    with maker.begin() as session:
        for double in doubles:
            register_node(session, double.url)


def add_subscriptions(maker, count: int, *, shared: int = 0, prefix: str = "Article") -> list[str]:
    """One tenant subscribes to `count` articles; a second tenant to the first `shared` of them
    (same source uuids). Returns the ids, the first tenant's first."""
    ids = []
    with maker.begin() as session:
        tenants = [Tenant(id=str(uuid.uuid4()), name=f"{prefix}-{t}-{uuid.uuid4().hex[:6]}") for t in range(2)]
        session.add_all(tenants)
        session.flush()
        wanted = [(tenants[0].id, i) for i in range(count)] + [(tenants[1].id, i) for i in range(shared)]
        for tenant_id, article in wanted:
            title = f"{prefix} {article}"
            sub = Subscription(id=str(uuid.uuid4()), tenant_id=tenant_id, wiki=WIKI, title=title,
                               source_uuid=str(source_uuid(WIKI, title)), state="pending")
            session.add(sub)
            ids.append(sub.id)
        session.flush()
        changes.note(session, ids)          # as the admin API does: a running scheduler reads them next tick
    return ids


def expected_routes(maker, node_ids, strategy: str = router.MODULO) -> dict[str, str]:
    with maker.begin() as session:
        rows = session.execute(sa.select(Subscription.id, Subscription.source_uuid)
                               .where(Subscription.enabled.is_(True),
                                      Subscription.state.notin_(("limit_reached", "disabled")))).all()
    return router.assign(dict(rows), node_ids, strategy)


def assignments(maker) -> dict[str, tuple[str, bool]]:
    with maker.begin() as session:
        return {a.subscription_id: (a.node_id, a.acked) for a in session.scalars(sa.select(Assignment))}


def subscriptions(maker) -> dict[str, Subscription]:
    with maker.begin() as session:
        return {s.id: s for s in session.scalars(sa.select(Subscription))}


def held(doubles: list[SpawnDouble]) -> dict[str, str]:
    """{subscription_id: node_id} of what the doubles run now."""
    return {sub_id: d.node_id for d in doubles for sub_id in d.subs}


def copies(doubles: list[SpawnDouble]) -> set[tuple[str, str]]:
    """(subscription_id, node_id) of every copy the doubles run now (a move keeps the old copy for a tick)."""
    return {(sub_id, d.node_id) for d in doubles for sub_id in d.subs}
