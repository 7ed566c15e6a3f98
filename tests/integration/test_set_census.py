"""The census on real parts: the Chamorro Wikipedia (scripts/services/mediawiki-chwiki.sh) bootstrapped through the
hub from its dump re-split into 4 gzip files on the local nginx edge, of which the set names only 3, as a user who
missed a file would. Nothing in the files shows the gap, and the catch-up reads only what is newer than the dump.
The set's catch-up reader lists every revision id the wiki holds (through the identity's budget) into Cassandra; the
hub hands the shards to both nodes by their stable hash; each node finds the left-out file's revisions missing in its
shards, writes them, and proves them: the store then equals the API field by field."""
import shutil
import uuid
from contextlib import contextmanager
from typing import Iterator
from urllib.parse import urlsplit

import pytest
import requests

from blackwidow import census_plan
from shared.census_wire import listing_key
from shared.revisions.cassandra_store import CassandraRevisionStore
from tests.fixtures.chwiki_wiki import DBNAME
from tests.integration.coordination_support import wait_for
from tests.integration.test_dump_bootstrap_hub import cluster
from tests.support.hub import HubProcesses
from tests.support.dumps import api_truth, serve_split, stored_fields

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTS = 4
LEFT_OUT = 1            # the second file
SHARDS = 16
LISTING = 500           # revision ids per listing request, anonymous
REPAIR = 50             # revisions per repair request


@pytest.fixture
def served_parts(edge, chwiki_wiki):
    """The wiki's own dump re-split by page range into PARTS gzip files on the edge: (urls, each part's revision
    ids)."""
    folder = edge.files_dir / f"chwiki-census-{uuid.uuid4().hex[:8]}"
    yield serve_split(chwiki_wiki.dump.read_text(encoding="utf-8"), PARTS, folder, edge.files_url)
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def left_out_set(name: str, postgres_url, edge, chwiki_wiki, served_parts, keyspace, tmp_path
                 ) -> Iterator[tuple[HubProcesses, list, dict]]:
    """A hub on schema `name`, two spawns, and a wiki set of the Chamorro wiki naming every file but LEFT_OUT:
    (hub, spawns, the set as made)."""
    urls, _ = served_parts
    named = [u for i, u in enumerate(urls) if i != LEFT_OUT]
    hosts = f"{urlsplit(chwiki_wiki.api_url).netloc},{urlsplit(edge.files_url).netloc}"
    with cluster(postgres_url, name, tmp_path, keyspace, hub_hosts=hosts, spawn_hosts=hosts,
                 hub_env={"BW_CENSUS_SHARDS": str(SHARDS)}) as (hub, nodes):
        tenant = hub.post("/v1/tenants", {"name": name, "quota": None})
        yield hub, nodes, hub.post("/v1/subscriptions", {
            "kind": "wiki", "tenant_id": tenant["id"], "wiki": chwiki_wiki.api_url, "dumps": named, "dbname": DBNAME,
            "dumped_at": chwiki_wiki.dumped_at.isoformat()})


def test_a_file_left_out_of_a_set_is_found_by_the_census_repaired_and_every_shard_proven(
        postgres_url, edge, chwiki_wiki, served_parts, cassandra_session, keyspace, tmp_path):
    _, ids = served_parts
    wiki = urlsplit(chwiki_wiki.api_url).netloc
    with left_out_set("census", postgres_url, edge, chwiki_wiki, served_parts, keyspace, tmp_path) as (hub, _, made):
        set_path = f"/v1/sets/{made['id']}"
        wait_for(lambda: hub.get(set_path)["state"] == "following", 600, 0.5, "the set caught up")
        wait_for(lambda: (hub.get(set_path)["census"] or {}).get("last") is not None, 600, 1.0,
                 "the first census")
        shown = hub.get(set_path)
        census = shown["census"]["last"]

        truth = api_truth(chwiki_wiki)
        store = CassandraRevisionStore(cassandra_session, keyspace)
        stored = stored_fields(store, wiki)
        # the left-out file's revisions (those the wiki still holds) were missing, and the census wrote them all
        left_out = ids[LEFT_OUT] & truth.keys()
        assert len(left_out) > 1000
        assert census["repaired"] == len(left_out) and census["missing"] == 0 and census["extra"] == 0
        assert shown["census"]["state"] == "proven" and census["proven_shards"] == census["shards"] == SHARDS
        # shard by shard: the wiki's revisions up to the cut, all stored; every shard had some of the gap
        per_shard = census["per_shard"]
        assert [s["shard"] for s in per_shard] == list(range(SHARDS))
        assert sum(s["wiki"] for s in per_shard) == census["revisions"] == len(truth)
        assert all(s["proven"] and s["stored"] == s["wiki"] and s["repaired"] > 0 for s in per_shard)
        # proven where the hub sent them: each shard on the node its stable hash names, both nodes at work
        nodes = sorted(n["id"] for n in hub.get("/v1/nodes")["items"])
        assert census["nodes"] == 2 and {s["node"] for s in per_shard} == set(nodes)
        assert all(s["node"] == census_plan.prover(made["id"], census["started_at"], s["shard"], nodes)
                   for s in per_shard)
        assert sum(s["pages"] for s in per_shard) == len({f["page_id"] for f in truth.values()})
        # the store equals what the API lists, field by field (revision rows keep the title read under)
        assert sorted(stored) == sorted(truth)
        drop = ("title",)
        assert {r: {k: v for k, v in f.items() if k not in drop} for r, f in stored.items()} == \
            {r: {k: v for k, v in f.items() if k not in drop} for r, f in truth.items()}
        # its cost: one listing request per 500 ids, and at most one repair request per 50 missing per shard
        listing = -(-len(truth) // LISTING)
        assert listing <= census["requests"] <= listing + len(left_out) // REPAIR + SHARDS

        # the reader let go of the listing once the hub held the census finished
        key = listing_key(made["id"], census["started_at"])
        wait_for(lambda: all(store.listing(wiki, key, n) == {} for n in range(SHARDS)), 60, 0.5,
                 "the listing removed")

        metrics = requests.get(f"{hub.metrics_url}/metrics", timeout=10).text
        assert f'bw_set_census_shards{{set="{made["id"]}",state="proven"}} {SHARDS}.0' in metrics


def test_a_node_killed_while_it_proves_census_shards_has_them_proven_by_the_other(
        postgres_url, edge, chwiki_wiki, served_parts, cassandra_session, keyspace, tmp_path):
    """The node that is not the set's reader is killed as soon as the listing is whole: the shards the hub had sent it
    and it had not proven go to the survivor, which proves them from the same listing; the census ends proven and
    the store equals the wiki."""
    _, ids = served_parts
    wiki = urlsplit(chwiki_wiki.api_url).netloc
    with left_out_set("census_kill", postgres_url, edge, chwiki_wiki, served_parts, keyspace, tmp_path) as (
            hub, nodes, made):
        by_url = {n["url"]: n["id"] for n in hub.get("/v1/nodes")["items"]}
        both = sorted(by_url.values())
        set_path = f"/v1/sets/{made['id']}"

        def listed_whole() -> dict | None:
            shown = hub.get(set_path)
            running = (shown["census"] or {}).get("running")
            return shown if running is not None and running["listed_whole"] else None
        wait_for(lambda: listed_whole() is not None, 600, 0.1, "the census's listing whole")
        shown = listed_whole()
        assert shown is not None and shown["census"]["running"]["shards_done"] < SHARDS
        reader = shown["catch_up"]["node"]
        victim = next(n for n in nodes if by_url[n.url] != reader)
        victim_id = by_url[victim.url]
        victim.kill9()
        started = shown["census"]["running"]["started_at"]

        wait_for(lambda: (hub.get(set_path)["census"] or {}).get("last") is not None, 600, 1.0, "the census")
        census = hub.get(set_path)["census"]
        last = census["last"]
        assert census["state"] == "proven" and last["started_at"] == started     # the same census, not a new one
        assert last["proven_shards"] == SHARDS and victim_id not in hub.live_nodes()
        # the victim's shards it had not proven were proven by the survivor
        moved = [s for s in last["per_shard"]
                 if census_plan.prover(made["id"], started, s["shard"], both) == victim_id and s["node"] == reader]
        assert moved, last["per_shard"]
        assert {s["node"] for s in last["per_shard"]} <= set(both)

        truth = api_truth(chwiki_wiki)
        stored = stored_fields(CassandraRevisionStore(cassandra_session, keyspace), wiki)
        assert ids[LEFT_OUT] & truth.keys() <= stored.keys()
        assert sorted(stored) == sorted(truth)
