"""INSERT ... ON CONFLICT for the two dialects the hub runs on."""
from typing import Callable

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

_INSERTS: dict[str, Callable[[sa.Table], postgresql.Insert | sqlite.Insert]] = {
    "postgresql": postgresql.insert, "sqlite": sqlite.insert}


def upsert(session: Session, table) -> postgresql.Insert | sqlite.Insert:
    """An insert into `table` that takes .on_conflict_do_update(...) on this session's database."""
    dialect = session.get_bind().dialect.name
    if dialect not in _INSERTS:
        raise NotImplementedError(f"upserts on {dialect}")
    return _INSERTS[dialect](table)
