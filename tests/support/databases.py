"""A PostgreSQL database of a test's own on the local server, for programs that migrate it themselves."""
import uuid
from contextlib import contextmanager
from typing import Iterator

import sqlalchemy as sa


@contextmanager
def fresh_database(server_url: str, prefix: str) -> Iterator[str]:
    """URL of an empty database created beside the one `server_url` names, dropped on exit."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield server_url.rsplit("/", 1)[0] + "/" + name
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
