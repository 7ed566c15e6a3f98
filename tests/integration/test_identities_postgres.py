"""blackwidow.store.identities on real PostgreSQL: the same checks as on SQLite
(tests/unit/hub/test_identities_store.py), float hold keys and all."""
import pytest
import sqlalchemy as sa

from tests.integration.coordination_support import db_url, maker  # noqa: F401
from tests.unit.hub.test_identities_store import check_store

pytestmark = pytest.mark.integration


def test_store(maker):  # noqa: F811
    with maker.begin() as session:
        session.execute(sa.text("TRUNCATE identities, identity_windows, subscriptions, tenants CASCADE"))
    check_store(maker)
