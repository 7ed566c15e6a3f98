"""Alembic environment: the URL comes from the caller (blackwidow.migrate) or from BW_DATABASE_URL."""
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy.pool import NullPool

from blackwidow.db import make_engine
from blackwidow.models import Base
from shared.config import DEFAULT_DATA_DIR, default_database_url

config = context.config
target_metadata = Base.metadata

if config.config_file_name is not None and not config.attributes.get("connection"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _database_url() -> str:
    url = config.attributes.get("database_url") or os.environ.get("BW_DATABASE_URL")
    return url or default_database_url(os.environ.get("BW_DATA_DIR") or DEFAULT_DATA_DIR)


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_offline() -> None:
    url = _database_url()
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True,
                      render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_database_url(), poolclass=NullPool)
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
