"""ops/aws/bootstrap.sh run for real, unprivileged, in a temporary directory: for each role it installs the
release tree into a fresh virtualenv (not editable), writes the environment file and the units for its own
paths; the hub's run migrates a fresh PostgreSQL database, and the spawn's settings reach the local Cassandra.
Only Secrets Manager, the instance metadata, apt-get, the system user and systemctl are left out."""
import re
import stat
import sys
import uuid
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from tests.support import packaging
from tests.support.databases import fresh_database
from tests.support.processes import ROOT, LoggedProcess, free_port, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]
COMMON = {"BW_NODE_SECRET": "bootstrap-node-secret", "BW_WIKI_ALLOWLIST": "127.0.0.1:8780"}


def bootstrap(role: str, tmp: Path, env: dict) -> dict[str, Path]:
    """Unpack a release tree under tmp/role and run its bootstrap.sh there; the places it wrote."""
    base = tmp / role
    places = {"app": base / "opt" / "blackwidow", "etc": base / "etc", "state": base / "var",
              "units": base / "systemd"}
    packaging.copy_source_tree(places["app"])
    packaging.fill_wheelhouse(packaging.requirements(places["app"]), tmp)
    packaging.run(["bash", places["app"] / "ops" / "aws" / "bootstrap.sh"], tmp, {
        **packaging.OFFLINE_PIP_ENV, **COMMON, **env, "BW_ROLE": role, "BW_SKIP_SYSTEM": "1",
        "BW_PYTHON": sys.executable, "BW_ETC_DIR": str(places["etc"]), "BW_STATE_DIR": str(places["state"]),
        "BW_SYSTEMD_DIR": str(places["units"])})
    return places


def env_file(places: dict[str, Path]) -> dict[str, str]:
    path = places["etc"] / "env"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line)


def assert_installed_for_real(places: dict[str, Path]) -> None:
    site = list((places["app"] / ".venv" / "lib").glob("python3*/site-packages"))
    assert len(site) == 1
    assert (site[0] / "blackwidow" / "migrations" / "env.py").is_file()
    assert (site[0] / "shared" / "revisions" / "cql" / "schema.cql").is_file()
    assert not list(site[0].glob("__editable__*"))


def assert_units_point_here(places: dict[str, Path], names: list[str]) -> None:
    for name in names:
        text = (places["units"] / name).read_text()
        assert f"EnvironmentFile={places['etc'] / 'env'}\n" in text, name
        marked = text.replace(str(places["app"]), "@APP@")
        assert not re.search(r"/opt/blackwidow|/etc/blackwidow|/var/lib/blackwidow", marked), name
        assert not re.search(r"[^=\s'\"]@APP@", marked), name       # each path put in once, whole


@pytest.fixture
def database_url(postgres_url):
    with fresh_database(postgres_url, "bw_boot") as url:
        yield url


def test_hub_bootstrap_migrates_and_its_environment_serves(database_url, tmp_path):
    places = bootstrap("hub", tmp_path, {"BW_ADMIN_TOKEN": "bootstrap-admin-token",
                                         "BW_DATABASE_URL": database_url})
    assert_installed_for_real(places)
    env = env_file(places)
    assert env["BW_DATABASE_URL"] == database_url and env["BW_DATA_DIR"] == str(places["state"])
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            revision = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
    finally:
        engine.dispose()
    assert revision == ScriptDirectory(str(ROOT / "sql" / "migrations")).get_current_head()
    assert_units_point_here(places, ["blackwidow-api.service", "blackwidow-scheduler.service"])

    # the environment file is all the installed hub needs (the unit's port is left to production)
    port = free_port()
    bin_dir = places["app"] / ".venv" / "bin"
    processes = [LoggedProcess([str(bin_dir / "blackwidow"), *argv], {**packaging.ISOLATED_ENV, **env},
                               tmp_path / f"{argv[0]}.log", cwd=places["state"])
                 for argv in (["serve", "--bind", f"127.0.0.1:{port}"], ["scheduler"])]
    try:
        wait_for(lambda: _status(f"http://127.0.0.1:{port}/health") == 200, 90, 0.2, "/health of the hub")
    finally:
        for proc in processes:
            proc.stop()


def test_spawn_bootstrap_settings_reach_cassandra(cassandra_cluster, tmp_path):
    keyspace = f"bw_boot_{uuid.uuid4().hex[:10]}"
    places = bootstrap("spawn", tmp_path, {
        "BW_HUB_URL": "http://127.0.0.1:8700", "BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": keyspace,
        "BW_USER_AGENT_CONTACT": "mailto:ops@example.org", "AWS_REGION": "eu-west-1",
        "BW_ADVERTISE_IP": "127.0.0.1", "BW_ASG_NAME": "spawns"})
    assert_installed_for_real(places)
    env = env_file(places)
    assert env["BW_ADVERTISE_URL"] == "http://127.0.0.1:8701" and env["BW_ASG_NAME"] == "spawns"
    assert_units_point_here(places, ["blackwidow-spawn.service", "blackwidow-load-metric.service"])
    try:
        # the schema tool of the installed package, configured by nothing but the environment file
        packaging.run([places["app"] / ".venv" / "bin" / "python", "-m", "shared.revisions.cql_schema"],
                      places["state"], env)
        cassandra_cluster.refresh_schema_metadata()
        assert "revisions_by_page" in cassandra_cluster.metadata.keyspaces[keyspace].tables
    finally:
        cassandra_cluster.bw_session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)


def _status(url: str) -> int | None:
    try:
        return requests.get(url, timeout=2).status_code
    except requests.RequestException:
        return None
