"""Apply the alembic migrations in sql/migrations/ to a database (used by `blackwidow migrate` and tests)."""
from pathlib import Path

from alembic import command
from alembic.config import Config

from blackwidow.db import make_engine
from shared.package_data import package_path

# A wheel installs sql/migrations/ as the package blackwidow.migrations (pyproject.toml, package-dir).
INSTALLED_DIR = "migrations"
CHECKOUT_DIR = "sql/migrations"


def migrations_dir() -> Path:
    """alembic's script directory: the installed package's copy, else the checkout's sql/migrations/."""
    return package_path("blackwidow", INSTALLED_DIR, CHECKOUT_DIR)


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    # Passed as an attribute, not an ini option: configparser would choke on '%' in passwords.
    cfg.attributes["database_url"] = database_url
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    """Bring the schema to `revision`. Idempotent: an up-to-date database is left alone."""
    engine = make_engine(database_url)
    try:
        with engine.begin() as conn:
            cfg = alembic_config(database_url)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    finally:
        engine.dispose()


def head() -> str | None:
    """The revision `upgrade` brings a database to: the newest in this package's migrations."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("")).get_current_head()


def current(database_url: str) -> str | None:
    """The revision the database is at, or None before the first migration."""
    from alembic.runtime.migration import MigrationContext

    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
