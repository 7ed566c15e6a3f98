"""Pages deleted and moved on the writable wiki, seen through the hub: `blackwidow serve` and `scheduler` on
PostgreSQL with `spawn serve` nodes. A deleted page's subscription shows `deleted` in the admin API and the
dashboard's filter, stays on its node without being re-sent as failed, and runs again with the whole history
once the page is undeleted. A moved page's subscription follows it, and a subscription to the new title ends on
the same node and the same source."""
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import pytest

from shared.hashing import source_uuid
from tests.fixtures.writable_wiki import API_URL, AdminApi
from tests.integration.coordination_support import SECRET, new_schema_url, wait_for
from tests.integration.test_hub_e2e import ADMIN_TOKEN, INTERVAL_S, spawn as spawn_process
from tests.support.hub import HubProcesses
from tests.support.processes import SpawnProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]
WIKI_HOST = urlsplit(API_URL).netloc
FAST_REVISITS = {"BW_REVISIT_MIN_S": "0.5", "BW_REVISIT_MAX_S": "2"}


def make_hub(postgres_url: str, schema: str, run_dir: Path, env: dict | None = None) -> HubProcesses:
    return HubProcesses({"BW_DATABASE_URL": new_schema_url(postgres_url, schema), "BW_NODE_SECRET": SECRET,
                         "BW_LOG_JSON": "true", "BW_POLL_INTERVAL_S": str(INTERVAL_S),
                         "BW_WIKI_ALLOWLIST": WIKI_HOST, "BW_WORKERS": "1", **(env or {})}, run_dir,
                        admin_token=ADMIN_TOKEN)


def start_nodes(hub: HubProcesses, run_dir: Path, count: int, revisits: dict) -> list[SpawnProcess]:
    """`count` spawn nodes of the started hub on the writable wiki (an SQLite store each), once live;
    `revisits`: their BW_REVISIT_* settings."""
    env = {"BW_NODE_SECRET": SECRET, "BW_CASSANDRA_HOSTS": "", "BW_WIKI_ALLOWLIST": WIKI_HOST, **revisits}
    nodes: list[SpawnProcess] = []
    try:
        for i in range(count):
            (run_dir / f"node-{i}").mkdir()
            nodes.append(SpawnProcess(hub.url, {**env, "BW_DATA_DIR": str(run_dir / f"node-{i}")},
                                      run_dir / f"node-{i}.log").wait_ready())
        wait_for(lambda: len(hub.live_nodes()) == count, 60, 0.2)
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return nodes


def row(hub: HubProcesses, sub_id: str) -> dict:
    return next(s for s in hub.subscriptions() if s["id"] == sub_id)


@contextmanager
def one_node_subscription(postgres_url: str, writable_wiki, tmp_path: Path, name: str,
                          edits: int) -> Iterator[tuple[HubProcesses, AdminApi, str, dict]]:
    """A hub on schema `name` with one spawn node, and a subscription to a new page of `edits` revisions:
    (hub, the wiki's administrator, the page's title, the subscription as created). Stopped after."""
    hub = make_hub(postgres_url, name, tmp_path)
    admin = writable_wiki.admin()
    title = writable_wiki.unique_title(f"Hub {name} page")
    for i in range(edits):
        admin.edit(title, f"text {i}", summary=f"edit {i}")
    node = None
    try:
        hub.start("first")
        node = spawn_process(hub, tmp_path, 0, wiki_host=WIKI_HOST, env=FAST_REVISITS)
        wait_for(lambda: len(hub.live_nodes()) == 1, 60, 0.2)
        tenant = hub.post("/v1/tenants", {"name": name, "quota": None})
        sub = hub.post("/v1/subscriptions", {"tenant_id": tenant["id"], "wiki": writable_wiki.api_url,
                                             "title": title})
        yield hub, admin, title, sub
    finally:
        if node is not None:
            node.stop()
        hub.stop()


def test_the_hub_shows_a_deleted_page_and_resumes_it_after_its_undeletion(postgres_url, writable_wiki, tmp_path):
    with one_node_subscription(postgres_url, writable_wiki, tmp_path, "deleted", 3) as (hub, admin, title, sub):
        wait_for(lambda: row(hub, sub["id"])["state"] == "running" and row(hub, sub["id"])["revisions"] == 3, 60, 0.2)
        placed_on = row(hub, sub["id"])["node"]

        admin.delete(title)
        wait_for(lambda: row(hub, sub["id"])["state"] == "deleted", 30, 0.2)
        assert "deleted" in row(hub, sub["id"])["last_error"] and row(hub, sub["id"])["node"] == placed_on
        listed = hub.get("/v1/dashboard", state="deleted")["subscriptions"]
        assert [s["id"] for s in listed["recent"]] == [sub["id"]] and listed["by_state"]["deleted"] == 1
        assert [s["id"] for s in hub.subscriptions(state="deleted")] == [sub["id"]]
        reloads_before = hub.get("/v1/dashboard")["reloads"]
        time.sleep(6 * INTERVAL_S)
        # deleted is no failure: nothing was dropped or re-sent for it, and it stayed on its node
        assert hub.get("/v1/dashboard")["reloads"] == reloads_before
        assert (row(hub, sub["id"])["state"], row(hub, sub["id"])["node"]) == ("deleted", placed_on)

        admin.undelete(title)
        wait_for(lambda: row(hub, sub["id"])["state"] == "running", 30, 0.2)
        assert row(hub, sub["id"])["revisions"] == 3 and row(hub, sub["id"])["last_error"] is None
        newest = admin.edit(title, "after the undeletion")
        wait_for(lambda: (row(hub, sub["id"])["last_rev_id"], row(hub, sub["id"])["revisions"]) == (newest, 4), 30,
                 0.2)


def test_a_moved_page_keeps_one_source_for_its_old_and_new_titles_across_the_cluster(
        postgres_url, writable_wiki, tmp_path):
    hub = make_hub(postgres_url, "moved", tmp_path)
    admin = writable_wiki.admin()
    title = writable_wiki.unique_title("Hub move page")
    moved = f"{title} moved"
    for i in range(2):
        admin.edit(title, f"text {i}", summary=f"edit {i}")
    nodes: list[SpawnProcess] = []
    try:
        hub.start("first")
        nodes = start_nodes(hub, tmp_path, 2, FAST_REVISITS)
        t1 = hub.post("/v1/tenants", {"name": "first", "quota": None})
        t2 = hub.post("/v1/tenants", {"name": "second", "quota": None})
        old = hub.post("/v1/subscriptions", {"tenant_id": t1["id"], "wiki": writable_wiki.api_url, "title": title})
        wait_for(lambda: row(hub, old["id"])["revisions"] == 2, 60, 0.2)

        admin.move(title, moved)                       # leaves a redirect at the old title
        moved_key = str(source_uuid(writable_wiki.api_url, moved))
        wait_for(lambda: row(hub, old["id"])["page_key"] == moved_key and row(hub, old["id"])["revisions"] == 3,
                 30, 0.2)
        new = hub.post("/v1/subscriptions", {"tenant_id": t2["id"], "wiki": writable_wiki.api_url, "title": moved})

        def together() -> bool:
            a, b = row(hub, old["id"]), row(hub, new["id"])
            return (a["node"] == b["node"] is not None and a["state"] == b["state"] == "running"
                    and a["revisions"] == b["revisions"] == 3 and b["page_key"] == moved_key
                    and sorted(n.health()["sources"] for n in nodes) == [0, 1])
        wait_for(together, 60, 0.2)
        newest = admin.edit(moved, "after the move")
        wait_for(lambda: row(hub, old["id"])["last_rev_id"] == row(hub, new["id"])["last_rev_id"] == newest, 30, 0.2)
        assert sorted(n.health()["sources"] for n in nodes) == [0, 1]
    finally:
        for node in nodes:
            node.stop()
        hub.stop()
