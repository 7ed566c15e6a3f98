"""A whole wiki from its dump files through the hub: `blackwidow serve` and `scheduler` on PostgreSQL, two
`spawn serve` nodes writing to Cassandra, and the real Chamorro Wikipedia full-history dump (2,293 pages, 13,598
revisions) re-split by page range into 4 gzip files served by the local nginx edge, as Wikimedia splits large
wikis. A `kind: wiki` subscription made with `blackwidow admin sets add` is read file by file, two at a time; the
node reading a file is killed (SIGKILL) in the middle of it, and the file resumes on the other node from the
resume point the hub kept. The store ends equal to an independent reading of the XML, revision by revision and
field by field, with no revision written twice in the counts. A set naming a file that is not there shows that
file's error, keeps what its other file wrote, and never counts as read."""
import gzip
import shutil
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import pytest
import requests

from shared.revisions.cassandra_store import CassandraRevisionStore
from tests.fixtures.writable_wiki import AdminApi
from tests.integration.coordination_support import wait_for
from tests.integration.test_moved_deleted_pages_hub import make_hub, start_nodes
from tests.support.dumps import api_truth, assert_stored, stored_fields
from tests.support.hub import HubProcesses
from tests.support.processes import SpawnProcess
from tests.support.record_change_feed import import_xml

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WIKI_API = "https://ch.wikipedia.org/w/api.php"     # the dump's own wiki: no request goes to it
WIKI = "ch.wikipedia.org"
REVISIONS, PAGES, PARTS = 13_598, 2_293, 4


@pytest.fixture(scope="module")
def split_dump(edge, chwiki):
    folder = f"hub-dumps-{uuid.uuid4().hex[:8]}"
    target = edge.files_dir / folder
    target.mkdir(parents=True)
    urls = []
    for i, part in enumerate(chwiki.parts(PARTS), 1):
        name = f"chwiki-pages-meta-history{i}.xml.gz"
        (target / name).write_bytes(gzip.compress(part.encode("utf-8"), compresslevel=6))
        urls.append(f"{edge.files_url}{folder}/{name}")
    yield {"urls": urls, "truth": chwiki.truth, "missing": f"{edge.files_url}{folder}/absent.xml.gz"}
    shutil.rmtree(target, ignore_errors=True)


@contextmanager
def cluster(postgres_url: str, name: str, run_dir: Path, keyspace: str, *, hub_hosts: str,
            spawn_hosts: str, hub_env: dict | None = None,
            spawn_env: dict | None = None) -> Iterator[tuple[HubProcesses, list[SpawnProcess]]]:
    """A hub on PostgreSQL schema `name` and two spawns writing to `keyspace` (`hub_env`, `spawn_env`: more of
    their settings); stopped after."""
    hub = make_hub(postgres_url, name, run_dir, {"BW_WIKI_ALLOWLIST": hub_hosts, **(hub_env or {})})
    nodes: list[SpawnProcess] = []
    try:
        hub.start("first")
        nodes = start_nodes(hub, run_dir, 2, {"BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": keyspace,
                                              "BW_WIKI_ALLOWLIST": spawn_hosts, **(spawn_env or {})})
        yield hub, nodes
    finally:
        for node in nodes:
            node.stop()
        hub.stop()


def test_a_whole_wiki_from_split_dumps_with_a_node_killed_in_the_middle(
        postgres_url, edge, split_dump, cassandra_session, keyspace, tmp_path):
    files_host = urlsplit(edge.files_url).netloc
    with cluster(postgres_url, "dumps", tmp_path, keyspace, hub_hosts=f"*.wikipedia.org,{files_host}",
                 spawn_hosts=files_host) as (hub, nodes):
        by_id = {n["id"]: n["url"] for n in hub.get("/v1/nodes")["items"]}
        tenant = hub.post("/v1/tenants", {"name": "whole-wiki", "quota": None})
        code, created = hub.admin("sets", "add", "--tenant", tenant["id"], "--wiki", WIKI_API, "--dbname", "chwiki",
                                  "--content", "--parallel", "2", *split_dump["urls"])
        assert code == 0, created
        assert isinstance(created, dict) and created["state"] == "bootstrapping"
        set_path = f"/v1/sets/{created['id']}"

        # the first file with pages written and more to come: its node is killed
        def reading_with_progress():
            return next((f for f in hub.get(set_path)["files"]
                         if f["state"] == "reading" and f["pages_written"] > 0 and f["node"]), None)
        wait_for(lambda: reading_with_progress() is not None, 120, 0.1, "a file half read")
        victim_file = reading_with_progress()
        victim = next(n for n in nodes if n.url == by_id[victim_file["node"]])
        survivor_id = next(nid for nid, url in by_id.items() if nid != victim_file["node"])
        victim.kill9()
        at_kill = victim_file["pages_written"]

        # it resumes on the other node from the hub's resume point, never from an earlier one
        seen: list[tuple[str | None, int, str]] = []

        def dumped() -> bool:
            s = hub.get(set_path)
            f = next(x for x in s["files"] if x["id"] == victim_file["id"])
            seen.append((f["node"], f["pages_written"], f["state"]))
            return s["state"] == "dumped"
        wait_for(dumped, 300, 0.2, "every file written")
        assert any(node == survivor_id for node, _, _ in seen), seen
        assert all(pages >= at_kill for _, pages, _ in seen), seen
        assert victim_file["node"] not in hub.live_nodes()

        final = hub.get(set_path)
        progress = final["progress"]
        assert (progress["files_done"], progress["files_failed"], progress["files"]) == (PARTS, 0, PARTS)
        assert (progress["pages_written"], progress["revisions_written"]) == (PAGES, REVISIONS)
        assert progress["eta_s"] == 0.0
        assert all(f["finished_at"] and f["error"] is None for f in final["files"])

        store = CassandraRevisionStore(cassandra_session, keyspace)
        assert len(split_dump["truth"]) == REVISIONS
        assert_stored(store, WIKI, split_dump["truth"], content=True)

        # a file that is not there: its error shows, the other file is written, the set is never read
        code, broken = hub.admin("sets", "add", "--tenant", tenant["id"], "--wiki", WIKI_API,
                                 split_dump["missing"], split_dump["urls"][0])
        assert code == 0, broken
        assert isinstance(broken, dict)

        def settled() -> dict | None:
            s = hub.get(f"/v1/sets/{broken['id']}")
            states = [f["state"] for f in s["files"]]
            return s if states == ["failed", "done"] else None
        wait_for(lambda: settled() is not None, 120, 0.2, "the missing file failed and the other done")
        shown = settled()
        assert shown is not None and shown["state"] == "failed"
        missing = shown["files"][0]
        assert missing["error"].startswith("DumpNotFound") and "404" in missing["error"], missing
        assert missing["attempts"] >= 1 and missing["retry_at"] is not None
        time.sleep(2)
        assert hub.get(f"/v1/sets/{broken['id']}")["state"] == "failed"
        # the same file written by a second set changed nothing: the counts are still exact
        assert_stored(store, WIKI, split_dump["truth"], content=False)
        assert sum(1 for _ in store.revisions(WIKI)) == REVISIONS
        metrics = requests.get(f"{hub.metrics_url}/metrics", timeout=10).text
        assert f'bw_set_dump_revisions_written{{set="{created["id"]}"}} {float(REVISIONS)}' in metrics
        # the missing file is tried again after its backoff (pending, then reading, then failed again): it shows
        # failed between the tries
        failed = f'bw_set_dump_files{{set="{broken["id"]}",state="failed"}} 1.0'
        wait_for(lambda: failed in requests.get(f"{hub.metrics_url}/metrics", timeout=10).text, 60, 0.2,
                 "the missing file shown failed")


@dataclass(frozen=True)
class OwnDump:
    url: str
    dumped_at: datetime
    after: list[int]            # revisions made after the dump
    kept: str                   # a page in the dump and not changed after it
    admin: AdminApi
    hosts: str                  # the edge's wiki and files host[:port]
    wiki_host: str


@pytest.fixture
def own_dump(writable_wiki, edge) -> Iterator[OwnDump]:
    """The writable wiki dumped with MediaWiki's dumpBackup.php --full (served by the edge), with pages in the main
    and the project namespace edited before the dump, and an edit and a new page in each after it."""
    admin = writable_wiki.admin()
    kept, edited, created = (writable_wiki.unique_title(f"Dump {what}") for what in ("kept", "edited", "created"))
    project = [f"Project:{t}" for t in (edited, created)]
    for title in (kept, edited, project[0]):
        for i in range(2):
            admin.edit(title, f"{title} before the dump, {i}")
    dumped_at = datetime.now(timezone.utc).replace(microsecond=0)
    time.sleep(1.1)                 # revisions are stamped in seconds: nothing of the dump's second is after it
    folder = edge.files_dir / f"writable-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    (folder / "writable-full.xml.gz").write_bytes(gzip.compress(writable_wiki.dump_full()))
    after = [admin.edit(edited, f"{edited} after the dump"), admin.edit(created, f"{created} made after the dump"),
             admin.edit(project[0], "after the dump"), admin.edit(project[1], "made after the dump")]
    wiki_host = urlsplit(edge.writable_api_url).netloc
    yield OwnDump(f"{edge.files_url}{folder.name}/writable-full.xml.gz", dumped_at, after, kept, admin,
                  f"{wiki_host},{urlsplit(edge.files_url).netloc}", wiki_host)
    shutil.rmtree(folder, ignore_errors=True)


def _own_dump_set(hub, edge, dump: OwnDump, **extra) -> str:
    tenant = hub.post("/v1/tenants", {"name": "own-dump", "quota": None})
    created = hub.post("/v1/subscriptions", {
        "kind": "wiki", "tenant_id": tenant["id"], "wiki": edge.writable_api_url, "dumps": [dump.url],
        "dbname": "writable_wiki", "dumped_at": dump.dumped_at.isoformat(), **extra})
    return f"/v1/sets/{created['id']}"


def test_a_wiki_from_its_own_dump_is_caught_up_and_followed(
        postgres_url, edge, writable_wiki, own_dump, cassandra_session, keyspace, tmp_path):
    """Bootstrapped from the dump and caught up through the local edge's API, the store ends equal to what the wiki's
    API lists, revision by revision; then a new edit, a revision deletion, a page deletion, its undeletion and an
    import of old revisions are followed."""
    with cluster(postgres_url, "catchup", tmp_path, keyspace, hub_hosts=own_dump.hosts,
                 spawn_hosts=own_dump.hosts) as (hub, _):
        set_path = _own_dump_set(hub, edge, own_dump)
        wait_for(lambda: hub.get(set_path)["state"] == "following", 180, 0.2, "the set caught up")
        shown = hub.get(set_path)
        # the API read only what the dump lacks: the revisions after it, and those of the dump's last second
        after = own_dump.after
        assert shown["catch_up"]["error"] is None
        assert len(after) <= shown["catch_up"]["revisions_written"] <= len(after) + 6
        assert shown["progress"]["files_done"] == 1

        store = CassandraRevisionStore(cassandra_session, keyspace)
        truth = api_truth(writable_wiki)
        assert set(after) <= set(truth)
        stored = stored_fields(store, own_dump.wiki_host)
        assert sorted(stored) == sorted(truth)
        assert stored == truth

        # following: a revision made now reaches the store through the same reader
        newest = own_dump.admin.edit(own_dump.kept, f"{own_dump.kept} while followed")
        wait_for(lambda: newest in stored_fields(store, own_dump.wiki_host), 60, 0.5, "the new revision stored")
        assert stored_fields(store, own_dump.wiki_host) == api_truth(writable_wiki)
        assert hub.get(set_path)["catch_up"]["caught_up_to"] >= shown["catch_up"]["caught_up_to"]

        # what allrevisions never shows, read from the deletion log: a revision's text and comment hidden, a page
        # deleted (its revisions leave the wiki's lists; the store keeps their rows and marks the page), then
        # undeleted (its revisions come back with their old timestamps)
        admin, host = own_dump.admin, own_dump.wiki_host
        gone = writable_wiki.unique_title("Dump deleted")
        made = [admin.edit(gone, f"{gone} {i}") for i in range(2)]
        wait_for(lambda: set(made) <= set(stored_fields(store, host)), 60, 0.5, "the page to delete stored")
        gone_id = store.page_id(host, gone)
        oldest = min(r["revid"] for r in admin.history(own_dump.kept))
        admin.revisiondelete([oldest], hide=("content", "comment"))
        admin.delete(gone)

        def hidden_and_deleted() -> bool:
            stored = stored_fields(store, host)
            return stored[oldest]["sha1"] is None and stored[oldest]["comment"] is None and \
                store.page(host, gone_id).deleted
        wait_for(hidden_and_deleted, 60, 0.5, "the hidden fields gone and the page marked deleted")
        truth = api_truth(writable_wiki)
        assert (truth[oldest]["sha1"], truth[oldest]["comment"]) == (None, None) and not set(made) & set(truth)
        assert {r: f for r, f in stored_fields(store, host).items() if r not in made} == truth

        assert admin.undelete(gone) == len(made)
        wait_for(lambda: not store.page(host, gone_id).deleted, 60, 0.5, "the page's deletion mark lifted")
        assert stored_fields(store, host) == api_truth(writable_wiki)

        # an import: revisions from 2004, far behind the position, that only the import's log entry reveals
        admin.import_xml(import_xml(writable_wiki.unique_title("Dump imported")))
        wait_for(lambda: stored_fields(store, host) == api_truth(writable_wiki), 60, 0.5, "the imported history")
        assert any(f["timestamp"].year == 2004 for f in stored_fields(store, host).values())


def test_a_namespace_of_a_wiki_from_its_own_dump(
        postgres_url, edge, writable_wiki, own_dump, cassandra_session, keyspace, tmp_path):
    """kind namespace: only the project namespace's pages are written, from the dump and from the catch-up; then a
    page joins the namespace (made in it) and one leaves it (moved to the main namespace) while the set follows."""
    with cluster(postgres_url, "namespace", tmp_path, keyspace, hub_hosts=own_dump.hosts,
                 spawn_hosts=own_dump.hosts) as (hub, _):
        set_path = _own_dump_set(hub, edge, own_dump, kind="namespace", namespaces=[4])
        wait_for(lambda: hub.get(set_path)["state"] == "following", 180, 0.2, "the set caught up")
        truth = api_truth(writable_wiki, namespace=4)
        assert {r["ns"] for r in truth.values()} == {4} and set(own_dump.after[2:]) <= set(truth)
        store = CassandraRevisionStore(cassandra_session, keyspace)
        assert stored_fields(store, own_dump.wiki_host) == truth

        leaving = truth[own_dump.after[2]]
        # the project namespace's local name prefixes its titles: the part after it names a main-namespace page
        own_dump.admin.move(leaving["title"], f"{leaving['title'].split(':', 1)[1]} moved out", leave_redirect=False)
        joined = own_dump.admin.edit(f"Project:{writable_wiki.unique_title('Joins')}", "made in the namespace")

        seen: list = []

        def followed() -> bool:
            stored = stored_fields(store, own_dump.wiki_host)
            held = {r: f for r, f in stored.items() if f["page_id"] != leaving["page_id"]}
            now = api_truth(writable_wiki, namespace=4)
            seen[:] = [sorted(set(held) ^ set(now)), [(r, held[r], now[r]) for r in held.keys() & now.keys()
                                                      if held[r] != now[r]][:3]]
            return joined in stored and held == now
        try:
            wait_for(followed, 60, 0.5, "the page made in the namespace stored, and nothing of the one that left")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {seen}") from None
        # what was stored of the page that left stays; its move, outside the namespace, is not the set's
        left = {r for r, f in stored_fields(store, own_dump.wiki_host).items() if f["page_id"] == leaving["page_id"]}
        assert left == {r for r, f in truth.items() if f["page_id"] == leaving["page_id"]}
