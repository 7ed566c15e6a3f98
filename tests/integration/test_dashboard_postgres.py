"""GET /v1/dashboard on real PostgreSQL: the same seeded store gives the same document as on SQLite."""
import pytest

from blackwidow.models import utcnow
from tests.fixtures import dashboard
from tests.fixtures.hub import api_client, hub_config
# a migrated schema of its own, and clean tables per test
from tests.integration.coordination_support import db_url, maker  # noqa: F401

pytestmark = pytest.mark.integration


def test_dashboard_document(db_url, maker):  # noqa: F811
    api = api_client(hub_config(db_url), maker)
    dashboard.seed(dashboard.client_post(api), maker, utcnow())
    dashboard.check_document(api.simulate_get("/v1/dashboard").json)
    failed = api.simulate_get("/v1/dashboard", params={"state": "failed"}).json["subscriptions"]
    assert [(s["title"], s["last_error"]) for s in failed["recent"]] == [("Ada Lovelace", dashboard.MARKUP_ERROR)]
