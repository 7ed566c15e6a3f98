"""Engine, sessions and the per-request session lifecycle. Store functions never commit; this does."""
import logging
import os
from contextlib import contextmanager
from typing import Iterator

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from shared.sqlite_wal import enable_wal

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 5000
PG_CONNECT_TIMEOUT_S = 5
# TCP keepalives on both ends of every PostgreSQL connection: a vanished peer is noticed in about
# idle + interval x count = 25 s instead of the OS default of hours. On the server side this is what frees
# the scheduler's advisory lock when the leader's host disappears (docs/coordination.md).
PG_KEEPALIVE = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
PG_SERVER_KEEPALIVE = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # WAL lets the API workers read while the scheduler writes; foreign keys make ON DELETE CASCADE work.
    enable_wal(dbapi_conn, SQLITE_BUSY_TIMEOUT_MS / 1000)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(database_url: str, **kwargs) -> sa.Engine:
    """Engine for the hub's store. SQLite files get their directory created and the pragmas above."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(url.database)), exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.get_backend_name() == "postgresql":
        # connect_args override the URL's own query: keep its options (a search_path, say) beside ours
        own = url.query.get("options") or ()
        parts = [own] if isinstance(own, str) else list(own)       # a tuple when the URL repeats it
        options = " ".join(filter(None, [*parts, PG_SERVER_KEEPALIVE]))
        kwargs.setdefault("connect_args", {"connect_timeout": PG_CONNECT_TIMEOUT_S, **PG_KEEPALIVE,
                                           "options": options})
    return sa.create_engine(url, pool_pre_ping=True, **kwargs)


def make_sessionmaker(database_url: str) -> sessionmaker:
    return sessionmaker(bind=make_engine(database_url), expire_on_commit=False)


@contextmanager
def session_scope(maker: sessionmaker) -> Iterator[Session]:
    """One transaction: commit when the block succeeds, roll back otherwise."""
    with maker.begin() as session:
        yield session


def ping(session: Session) -> None:
    """Raise if the database does not answer."""
    session.execute(sa.text("SELECT 1"))


class SessionMiddleware:
    """Opens req.context.session; commits when the responder succeeded, rolls back otherwise,
    always closes."""

    def __init__(self, maker: sessionmaker):
        self._maker = maker

    def process_request(self, req, resp) -> None:
        req.context.session = self._maker()

    def process_response(self, req, resp, resource, req_succeeded: bool) -> None:
        session = getattr(req.context, "session", None)
        if session is None:
            return
        try:
            if req_succeeded:
                session.commit()
            else:
                session.rollback()
        finally:
            session.close()
