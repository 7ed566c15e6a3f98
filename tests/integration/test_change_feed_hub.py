"""The change feed through the hub: `blackwidow serve` and `scheduler` on PostgreSQL with two `spawn serve`
nodes harvesting pages of the writable wiki, whose per-page revisits are an hour away. Every change below
therefore reaches the store through the wiki's feed alone: read once for the cluster by one node, routed by
the hub to the node fetching the page. The admin API shows the feed (reader, position, watermark, lag) and
each subscription's freshness watermark; a restarted hub goes on from the feed position it persisted."""
import json
import time
from datetime import datetime, timezone

import pytest

from shared.hashing import source_uuid, wiki_key
from shared.revisions.sqlite_store import SQLiteRevisionStore
from tests.fixtures.writable_wiki import WritableWiki
from tests.integration.coordination_support import wait_for
from tests.integration.test_moved_deleted_pages_hub import WIKI_HOST, make_hub, start_nodes
from tests.support.processes import SpawnProcess
from tests.support.record_change_feed import import_xml, suppressor

pytestmark = [pytest.mark.integration, pytest.mark.slow]
FEED_INTERVAL_S = 1
# a page is asked "anything new?" on its own only after an hour: within a test only the feed finds changes
SLOW_REVISITS = {"BW_REVISIT_MIN_S": "3600", "BW_REVISIT_MAX_S": "86400"}


def _when(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_changes_reach_the_store_through_one_feed_for_the_cluster(
        postgres_url, writable_wiki: WritableWiki, tmp_path):
    admin = writable_wiki.admin()
    edited, moved, deleted, imported = (writable_wiki.unique_title(f"Feed {what} page")
                                        for what in ("edited", "moved", "deleted", "imported"))
    for title in (edited, moved, deleted, imported):
        for i in range(2):
            admin.edit(title, f"{title} text {i}", summary=f"edit {i}")
    wiki_log = writable_wiki.run_dir / "server.log"        # php -S logs every request
    log_start = len(wiki_log.read_text().splitlines())
    began = time.monotonic()
    hub = make_hub(postgres_url, "feed", tmp_path, {"BW_FEED_INTERVAL_S": str(FEED_INTERVAL_S)})
    nodes: list[SpawnProcess] = []
    try:
        hub.start("first")
        nodes = start_nodes(hub, tmp_path, 2, SLOW_REVISITS)
        tenant = hub.post("/v1/tenants", {"name": "feed", "quota": None})
        subs = {title: hub.post("/v1/subscriptions", {"tenant_id": tenant["id"], "wiki": writable_wiki.api_url,
                                                      "title": title})["id"]
                for title in (edited, moved, deleted, imported)}

        def row(title: str) -> dict:
            return hub.get(f"/v1/subscriptions/{subs[title]}")

        def settled_with(title: str, revisions: int) -> bool:
            r = row(title)
            return r["revisions"] == revisions and r["settled"] is True and r["watermark"] is not None
        wait_for(lambda: all(settled_with(t, 2) for t in subs), 60, 0.2, "every page harvested and settled")

        feeds = hub.get("/v1/feeds")["items"]
        assert [f["wiki"] for f in feeds] == [writable_wiki.api_url]
        feed = feeds[0]
        assert feed["reader"] in hub.live_nodes() and feed["position"] and feed["error"] is None
        assert feed["subscriptions"] == 4 and feed["lag_s"] is not None and feed["lag_s"] < 30

        # a new revision: its page's source reads it, the subscription's watermark passes it
        newest = admin.edit(edited, "a change the feed reports")
        edited_at = datetime.now(timezone.utc).replace(microsecond=0)
        wait_for(lambda: row(edited)["last_rev_id"] == newest and row(edited)["revisions"] == 3, 30, 0.2,
                 "the new revision stored")
        wait_for(lambda: row(edited)["settled"] and _when(row(edited)["watermark"]) >= edited_at, 30, 0.2,
                 "the watermark past the edit")

        # a restarted hub goes on from the position it persisted: an edit made while it was down is not missed
        hub.stop()
        during = admin.edit(edited, "an edit while the hub is down")
        hub.start("second")
        wait_for(lambda: row(edited)["last_rev_id"] == during and row(edited)["revisions"] == 4, 60, 0.2,
                 "the edit made while the hub was down stored")

        # a move: the subscription follows the page id to its new title
        admin.move(moved, f"{moved} renamed")
        renamed_key = str(source_uuid(writable_wiki.api_url, f"{moved} renamed"))
        wait_for(lambda: row(moved)["page_key"] == renamed_key and row(moved)["revisions"] == 3, 30, 0.2,
                 "the move followed")

        # a deletion shows, an undeletion resumes
        admin.delete(deleted)
        wait_for(lambda: row(deleted)["state"] == "deleted", 30, 0.2, "the deletion seen")
        admin.undelete(deleted)
        wait_for(lambda: row(deleted)["state"] == "running" and row(deleted)["revisions"] == 2, 30, 0.2,
                 "the undeletion seen")

        # revisions with old timestamps: the import's log entry has the whole history compared
        admin.import_xml(import_xml(imported))          # two revisions from 2004 and a null revision now
        wiki_revisions = len(admin.history(imported))
        wait_for(lambda: row(imported)["revisions"] == wiki_revisions and row(imported)["complete"] is True,
                 30, 0.2, "the imported revisions stored")

        # revision deletion: the hidden text leaves the store within a feed cycle
        hidden = admin.history(edited)[0]["revid"]
        admin.revisiondelete([hidden], hide=("content",))
        hidden_metric = f'bw_spawn_revision_visibility_changes_total{{change="hidden",wiki="{WIKI_HOST}"}}'
        wait_for(lambda: sum(n.metric(hidden_metric) for n in nodes) >= 1, 30, 0.2, "the hidden text removed")
        # shown again: the log entry hides nothing, so the revision is read again and written back
        admin.revisiondelete([hidden], hide=(), show=("content",))
        shown_metric = f'bw_spawn_revision_visibility_changes_total{{change="shown",wiki="{WIKI_HOST}"}}'
        wait_for(lambda: sum(n.metric(shown_metric) for n in nodes) >= 1, 30, 0.2, "the shown text written again")

        # one reader for the cluster at a time: about one feed request per interval, not one per node
        elapsed = time.monotonic() - began
        reads = [line for line in wiki_log.read_text().splitlines()[log_start:] if "list=recentchanges" in line]
        assert len(reads) <= 1.5 * elapsed / FEED_INTERVAL_S + 10, (len(reads), elapsed)
        assert hub.get("/v1/feeds")["items"][0]["changes"] >= 6
    finally:
        for node in nodes:
            node.stop()
        hub.stop()


def test_a_suppression_leaves_the_store_within_a_feed_cycle_when_the_identity_may_read_its_log(
        postgres_url, writable_wiki: WritableWiki, tmp_path):
    """The wiki's identity uses Overseer's bot password, which may read the suppression log (and nothing
    hidden): the feed's reader reads that log in the same requests, and a suppressed comment and editor leave
    the node's store as a revision deletion's do, with no per-page revisit."""
    admin = writable_wiki.admin()
    title = writable_wiki.unique_title("Feed suppressed page")
    first = admin.edit(title, "first text", "a comment to suppress")
    admin.edit(title, "second text", "edit")
    hub = make_hub(postgres_url, "feed_suppress", tmp_path, {"BW_FEED_INTERVAL_S": str(FEED_INTERVAL_S)})
    nodes: list[SpawnProcess] = []
    try:
        hub.start("first")
        hub.put(f"/v1/identities/{WIKI_HOST}", {"credential": writable_wiki.overseer_credential})
        nodes = start_nodes(hub, tmp_path, 1, {**SLOW_REVISITS,
                                               "BW_CREDENTIALS_FILE": str(writable_wiki.credentials_file)})
        tenant = hub.post("/v1/tenants", {"name": "feed", "quota": None})
        sub = hub.post("/v1/subscriptions", {"tenant_id": tenant["id"], "wiki": writable_wiki.api_url,
                                             "title": title})["id"]
        wait_for(lambda: hub.get(f"/v1/subscriptions/{sub}")["revisions"] == 2
                 and hub.get(f"/v1/subscriptions/{sub}")["settled"] is True, 60, 0.2, "the page harvested, settled")
        store = SQLiteRevisionStore(str(tmp_path / "node-0" / "revisions.db"))
        page = store.page_id(wiki_key(writable_wiki.api_url), title)
        assert page is not None

        def stored_first():
            return next(r for r in store.history(wiki_key(writable_wiki.api_url), page) if r.rev_id == first)
        assert stored_first().comment == "a comment to suppress" and stored_first().user == "Admin"

        suppressor(writable_wiki, admin).revisiondelete([first], hide=("comment", "user"), suppress=True)
        suppressed_at = time.monotonic()
        wait_for(lambda: stored_first().comment_hidden and stored_first().user_hidden, 30, 0.2,
                 "the suppressed fields gone from the store")
        took = time.monotonic() - suppressed_at
        row = stored_first()
        assert row.comment is None and row.user is None and row.user_id is None
        assert took < 15, took      # a feed read and a poll or two, not the day-long revisit
        assert admin.history(title)[0].get("suppressed") is True        # the wiki's own account
        # nothing secret left the node: the hub and its API know the credential by name only
        identity = hub.get(f"/v1/identities/{WIKI_HOST}")
        assert identity["credential"] == writable_wiki.overseer_credential and identity.get("auth_error") is None
        secret = json.loads(writable_wiki.credentials_file.read_text())[writable_wiki.overseer_credential]["password"]
        assert secret not in json.dumps(identity) and secret not in json.dumps(hub.get("/v1/feeds"))
    finally:
        for node in nodes:
            node.stop()
        hub.stop()
