"""The alembic migrations build exactly the schema models.py describes (SQLite here; PostgreSQL in
tests/integration/test_hub_postgres.py)."""
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from blackwidow import migrate
from blackwidow.db import make_engine
from blackwidow.models import Base

HEAD = "0018"     # the newest migration in sql/migrations/versions


def schema_drift(url: str) -> list:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()


def test_upgrade_is_idempotent_and_matches_the_models(tmp_path):
    url = f"sqlite:///{tmp_path}/sub/dir/blackwidow.db"      # the directory is created
    assert migrate.current(url) is None
    migrate.upgrade(url)
    migrate.upgrade(url)
    assert migrate.current(url) == HEAD
    assert schema_drift(url) == []


def test_downgrade_to_base_and_back(tmp_path):
    url = f"sqlite:///{tmp_path}/blackwidow.db"
    migrate.upgrade(url)
    engine = make_engine(url)
    with engine.begin() as conn:
        cfg = migrate.alembic_config(url)
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
    engine.dispose()
    assert migrate.current(url) is None
    migrate.upgrade(url)
    assert migrate.current(url) == HEAD
