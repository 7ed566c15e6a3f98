"""The wheel deploys: built from a copy of the working tree, installed (not editable) into a fresh virtualenv
outside the checkout, its programs migrate SQLite and PostgreSQL, apply the CQL schema to a throwaway
keyspace, and run a hub, its scheduler and a spawn that harvests a page of the local wiki into it."""
import json
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from shared.hashing import wiki_key
from shared.revisions.cassandra_store import CassandraRevisionStore
from tests.support import packaging
from tests.support.databases import fresh_database
from tests.support.processes import ROOT, LoggedProcess, free_port, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ADMIN_TOKEN = "wheel-admin-token"
NODE_SECRET = "wheel-node-secret"
WIKI_HOST = "127.0.0.1:8780"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    bin: Path
    cwd: Path               # outside the checkout: nothing there is importable

    def run(self, *argv: str, env: dict | None = None) -> str:
        return packaging.run([self.bin / argv[0], *argv[1:]], self.cwd, env).stdout

    def start(self, name: str, *argv: str, env: dict) -> LoggedProcess:
        return LoggedProcess([str(self.bin / argv[0]), *argv[1:]], {**packaging.ISOLATED_ENV, **env},
                             self.cwd / f"{name}.log", cwd=self.cwd)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    tmp = tmp_path_factory.mktemp("wheel")
    source = packaging.copy_source_tree(tmp / "source")
    packaging.fill_wheelhouse(packaging.requirements(source), tmp)
    dist = tmp / "dist"
    dist.mkdir()
    wheel = packaging.build_wheel(source, dist)
    bin_dir = packaging.make_venv(tmp / "venv")
    packaging.install_wheel(bin_dir, wheel, tmp)
    work = tmp / "work"
    work.mkdir()
    return Installed(wheel, bin_dir, work)


@pytest.fixture
def pg_url(postgres_url):
    with fresh_database(postgres_url, "bw_wheel") as url:
        yield url


@pytest.fixture(scope="module")
def keyspace(installed, cassandra_cluster):
    """A throwaway keyspace made by the installed schema tool, dropped afterwards."""
    name = f"bw_wheel_{uuid.uuid4().hex[:10]}"
    try:
        out = installed.run("python", "-m", "shared.revisions.cql_schema", "--hosts", "127.0.0.1",
                            "--keyspace", name)
        assert f"keyspace {name}" in out
        cassandra_cluster.refresh_schema_metadata()
        yield name
    finally:
        cassandra_cluster.bw_session.execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=60)


def head_revision() -> str:
    return ScriptDirectory(str(ROOT / "sql" / "migrations")).get_current_head()


def test_the_wheel_carries_migrations_and_schema_and_installs_outside_the_checkout(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    versions = {f"blackwidow/migrations/versions/{p.name}" for p in (ROOT / "sql/migrations/versions").glob("*.py")}
    assert versions and versions <= names
    assert {"blackwidow/migrations/env.py", "blackwidow/migrations/script.py.mako",
            "shared/revisions/cql/schema.cql"} <= names
    assert zipfile.Path(installed.wheel, "shared/revisions/cql/schema.cql").read_text() == \
        (ROOT / "cassandra" / "schema.cql").read_text()

    where = json.loads(installed.run("python", "-c", "import json, blackwidow, shared.revisions.cql_schema as c, "
                                     "blackwidow.migrate as m; print(json.dumps([blackwidow.__file__, "
                                     "str(m.migrations_dir()), str(c.SCHEMA_PATH)]))"))
    site = str(installed.bin.parent / "lib")
    assert all(path.startswith(site) for path in where), where
    assert not list(installed.bin.parent.glob("lib/python*/site-packages/__editable__*"))


def test_migrate_the_embedded_sqlite_store(installed, tmp_path):
    out = installed.run("blackwidow", "migrate", env={"BW_DATABASE_URL": "", "BW_DATA_DIR": str(tmp_path)})
    assert json.loads(out) == {"revision": head_revision()}
    assert (tmp_path / "blackwidow.db").is_file()


def test_migrate_postgresql(installed, pg_url):
    out = installed.run("blackwidow", "migrate", env={"BW_DATABASE_URL": pg_url})
    assert json.loads(out) == {"revision": head_revision()}
    engine = sa.create_engine(pg_url)
    try:
        assert {"tenants", "subscriptions", "nodes"} <= set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_the_schema_tool_creates_every_table(installed, keyspace, cassandra_cluster):
    from shared.revisions.cql_schema import SCHEMA_PATH, split_statements

    want = {s.split()[5].split(".")[1] for s in split_statements(SCHEMA_PATH.read_text())
            if s.upper().startswith("CREATE TABLE")}
    assert set(cassandra_cluster.metadata.keyspaces[keyspace].tables) == want


def test_hub_scheduler_and_spawn_harvest_a_page(installed, pg_url, keyspace, cassandra_session,
                                                mediawiki, tmp_path):
    page = min((p for p in mediawiki.expected.pages if p.ns == 0 and not p.is_redirect and len(p.revisions) > 1),
               key=lambda p: len(p.revisions))
    common = {"BW_NODE_SECRET": NODE_SECRET, "BW_WIKI_ALLOWLIST": WIKI_HOST, "BW_LOG_JSON": "true"}
    hub_port = free_port()
    hub_url = f"http://127.0.0.1:{hub_port}"
    hub_env = {**common, "BW_ADMIN_TOKEN": ADMIN_TOKEN, "BW_DATABASE_URL": pg_url,
               "BW_DATA_DIR": str(tmp_path / "hub"), "BW_POLL_INTERVAL_S": "0.5", "BW_WORKERS": "1"}
    spawn_env = {**common, "BW_DATA_DIR": str(tmp_path / "spawn"), "BW_CASSANDRA_HOSTS": "127.0.0.1",
                 "BW_CASSANDRA_KEYSPACE": keyspace}
    admin = requests.Session()
    admin.headers["Authorization"] = f"Bearer {ADMIN_TOKEN}"
    processes = []
    try:
        processes.append(installed.start("api", "blackwidow", "serve", "--bind", f"127.0.0.1:{hub_port}",
                                         env=hub_env))
        processes.append(installed.start("scheduler", "blackwidow", "scheduler", env=hub_env))
        wait_for(lambda: _answers(hub_url + "/health"), 90, 0.2, f"/health of the hub ({processes[0].log})")
        assert requests.get(hub_url + "/health", timeout=5).json()["status"] == "ok"
        tenant = admin.post(hub_url + "/v1/tenants", json={"name": "wheel", "quota": None}, timeout=10)
        assert tenant.status_code == 201, tenant.text

        spawn_port = free_port()
        processes.append(installed.start("spawn", "spawn", "serve", "--hub", hub_url,
                                         "--bind", f"127.0.0.1:{spawn_port}", env=spawn_env))
        nodes = wait_for(lambda: _live_nodes(admin, hub_url), 90, 0.2, "the spawn's registration")
        assert [n["url"] for n in nodes] == [f"http://127.0.0.1:{spawn_port}"]

        created = admin.post(hub_url + "/v1/subscriptions", timeout=10, json={
            "tenant_id": tenant.json()["id"], "wiki": mediawiki.api_url, "title": page.title, "content": False})
        assert created.status_code == 201, created.text
        sub_url = f"{hub_url}/v1/subscriptions/{created.json()['id']}"
        wait_for(lambda: admin.get(sub_url, timeout=5).json()["revisions"] == len(page.revisions), 120, 0.5,
                 f"{len(page.revisions)} revisions of {page.title!r} reported to the hub")
    finally:
        for proc in reversed(processes):
            proc.stop()
    for proc in processes:
        assert "Traceback" not in proc.log.read_text(errors="replace"), proc.log
    # the installed scheduler ran its keepalive process (spawned: it imports blackwidow.keepalive from the
    # installed package), which ended with the stop signal to the group, and nothing was logged as an error
    scheduler_log = processes[1].log.read_text(errors="replace")
    assert '"keepalive.process_stopped"' in scheduler_log, scheduler_log
    assert '"level": "error"' not in scheduler_log, scheduler_log

    store = CassandraRevisionStore(cassandra_session, keyspace)
    page_id = store.page_id(wiki_key(mediawiki.api_url), page.title)
    stored = sorted(r.sha1 for r in store.history(wiki_key(mediawiki.api_url), page_id))
    assert stored == sorted(r.sha1 for r in page.revisions)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _live_nodes(admin: requests.Session, hub_url: str) -> list[dict]:
    return [n for n in admin.get(hub_url + "/v1/nodes", timeout=5).json()["items"] if n["state"] == "live"]
