"""A page deleted on the writable wiki, seen through the hub: `blackwidow serve` and `scheduler` on PostgreSQL
with one `spawn serve` node. The subscription shows `deleted` in the admin API and the dashboard's filter,
stays on its node without being re-sent as failed, and runs again with the whole history once the page is
undeleted."""
import time

import pytest

from tests.integration.coordination_support import SECRET, new_schema_url, wait_for
from tests.integration.test_hub_e2e import ADMIN_TOKEN, INTERVAL_S, spawn as spawn_process
from tests.support.hub import HubProcesses

pytestmark = [pytest.mark.integration, pytest.mark.slow]
WIKI_HOST = "127.0.0.1:8782"


def test_the_hub_shows_a_deleted_page_and_resumes_it_after_its_undeletion(postgres_url, writable_wiki, tmp_path):
    hub = HubProcesses({"BW_DATABASE_URL": new_schema_url(postgres_url, "deleted"), "BW_NODE_SECRET": SECRET,
                        "BW_LOG_JSON": "true", "BW_POLL_INTERVAL_S": str(INTERVAL_S), "BW_WIKI_ALLOWLIST": WIKI_HOST,
                        "BW_WORKERS": "1"}, tmp_path, admin_token=ADMIN_TOKEN)
    admin = writable_wiki.admin()
    title = writable_wiki.unique_title("Hub deletion page")
    for i in range(3):
        admin.edit(title, f"text {i}", summary=f"edit {i}")
    node = None
    try:
        hub.start("first")
        node = spawn_process(hub, tmp_path, 0, wiki_host=WIKI_HOST,
                             env={"BW_REVISIT_MIN_S": "0.5", "BW_REVISIT_MAX_S": "2"})
        wait_for(lambda: len(hub.live_nodes()) == 1, 60, 0.2)
        tenant = hub.post("/v1/tenants", {"name": "deletions", "quota": None})
        sub = hub.post("/v1/subscriptions", {"tenant_id": tenant["id"], "wiki": writable_wiki.api_url,
                                             "title": title})

        def row() -> dict:
            return next(s for s in hub.subscriptions() if s["id"] == sub["id"])
        wait_for(lambda: row()["state"] == "running" and row()["revisions"] == 3, 60, 0.2)
        placed_on = row()["node"]

        admin.delete(title)
        wait_for(lambda: row()["state"] == "deleted", 30, 0.2)
        assert "deleted" in row()["last_error"] and row()["node"] == placed_on
        listed = hub.get("/v1/dashboard", state="deleted")["subscriptions"]
        assert [s["id"] for s in listed["recent"]] == [sub["id"]] and listed["by_state"]["deleted"] == 1
        assert [s["id"] for s in hub.subscriptions(state="deleted")] == [sub["id"]]
        reloads_before = hub.get("/v1/dashboard")["reloads"]
        time.sleep(6 * INTERVAL_S)
        # deleted is no failure: nothing was dropped or re-sent for it, and it stayed on its node
        assert hub.get("/v1/dashboard")["reloads"] == reloads_before
        assert (row()["state"], row()["node"]) == ("deleted", placed_on)

        admin.undelete(title)
        wait_for(lambda: row()["state"] == "running", 30, 0.2)
        assert row()["revisions"] == 3 and row()["last_error"] is None
        newest = admin.edit(title, "after the undeletion")
        wait_for(lambda: row()["last_rev_id"] == newest and row()["revisions"] == 4, 30, 0.2)
    finally:
        if node is not None:
            node.stop()
        hub.stop()
