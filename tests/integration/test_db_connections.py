"""PostgreSQL connections of the hub: keepalives on both ends, and a URL's own options kept beside them."""
import pytest
import sqlalchemy as sa

from blackwidow.db import make_engine

pytestmark = pytest.mark.integration


def test_keepalives_and_the_urls_own_options_both_apply(postgres_url):
    engine = make_engine(f"{postgres_url}?options=-csearch_path%3Dsomewhere_else")
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("SHOW search_path")).scalar() == "somewhere_else"
            # the server probes a silent client after 10 s: a vanished leader frees its lock in ~25 s
            assert [conn.execute(sa.text(f"SHOW tcp_keepalives_{k}")).scalar() for k in ("idle", "interval", "count")] \
                == ["10", "5", "3"]
    finally:
        engine.dispose()
