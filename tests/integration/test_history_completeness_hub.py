"""Revisions imported with old timestamps into a harvested page of the writable wiki, seen through the hub:
`blackwidow serve` and `scheduler` on PostgreSQL with a `spawn serve` node. The subscription's `complete` in the
admin API is null until its node compared the stored history with the wiki's, true once it did, and true again
with the imported revisions counted once the node found them missing and wrote them."""
import pytest

from tests.fixtures.writable_wiki import WritableWiki
from tests.integration.coordination_support import wait_for
from tests.integration.test_moved_deleted_pages_hub import one_node_subscription, row
from tests.support.record_change_feed import import_xml

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_admin_api_shows_a_history_proven_complete_after_an_import_with_old_timestamps(
        postgres_url, writable_wiki: WritableWiki, tmp_path):
    with one_node_subscription(postgres_url, writable_wiki, tmp_path, "completeness", 2) as (hub, admin, title, sub):
        assert sub["complete"] is None
        wait_for(lambda: row(hub, sub["id"])["revisions"] == 2 and row(hub, sub["id"])["complete"] is True, 60, 0.2)

        admin.import_xml(import_xml(title))        # two revisions from 2004 and a null revision now
        wiki_revisions = len(admin.history(title))
        assert wiki_revisions == 5
        wait_for(lambda: row(hub, sub["id"])["revisions"] == wiki_revisions and row(hub, sub["id"])["complete"] is True,
                 60, 0.2)
        assert row(hub, sub["id"])["state"] == "running"
        assert hub.get(f"/v1/subscriptions/{sub['id']}")["complete"] is True
