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
from urllib.parse import urlsplit

import pytest
import requests

from shared.revisions.cassandra_store import CassandraRevisionStore
from tests.integration.coordination_support import wait_for
from tests.integration.test_moved_deleted_pages_hub import make_hub, start_nodes
from tests.support.dumps import assert_stored, split_pages, truth, unpack_chwiki

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WIKI_API = "https://ch.wikipedia.org/w/api.php"     # the dump's own wiki: no request goes to it
WIKI = "ch.wikipedia.org"
REVISIONS, PAGES, PARTS = 13_598, 2_293, 4


@pytest.fixture(scope="module")
def split_dump(edge, tmp_path_factory):
    work = tmp_path_factory.mktemp("chwiki-hub")
    source = unpack_chwiki(work)
    folder = f"hub-dumps-{uuid.uuid4().hex[:8]}"
    target = edge.files_dir / folder
    target.mkdir(parents=True)
    urls = []
    for i, part in enumerate(split_pages(source.read_text(encoding="utf-8"), PARTS), 1):
        name = f"chwiki-pages-meta-history{i}.xml.gz"
        (target / name).write_bytes(gzip.compress(part.encode("utf-8"), compresslevel=6))
        urls.append(f"{edge.files_url}{folder}/{name}")
    yield {"urls": urls, "truth": truth(source), "missing": f"{edge.files_url}{folder}/absent.xml.gz"}
    shutil.rmtree(target, ignore_errors=True)


def test_a_whole_wiki_from_split_dumps_with_a_node_killed_in_the_middle(
        postgres_url, edge, split_dump, cassandra_session, keyspace, tmp_path):
    files_host = urlsplit(edge.files_url).netloc
    hub = make_hub(postgres_url, "dumps", tmp_path, {"BW_WIKI_ALLOWLIST": f"*.wikipedia.org,{files_host}"})
    nodes = []
    try:
        hub.start("first")
        nodes = start_nodes(hub, tmp_path, 2, {"BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": keyspace,
                                               "BW_WIKI_ALLOWLIST": files_host})
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
        assert f'bw_set_dump_files{{set="{broken["id"]}",state="failed"}} 1.0' in metrics
    finally:
        for node in nodes:
            node.stop()
        hub.stop()
