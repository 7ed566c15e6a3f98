"""A Cassandra node killed -9 mid-harvest: on a real 3-node cluster (scripts/services/cassandra.sh up-cluster,
RF 3, LOCAL_QUORUM writes and reads) a hub and 3 spawns harvest the seeded wiki with content; one node dies;
the harvest completes, equal to the wiki, texts included; the node comes back and reads at the chosen level
through each node as coordinator agree. The cluster is started for this test only and stopped after."""
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import WhiteListRoundRobinPolicy
from cassandra import ConsistencyLevel

from shared.hashing import wiki_key
from shared.revisions.cassandra_store import CassandraRevisionStore, cluster_for
from shared.revisions.cql_schema import apply_schema
from shared.revisions.text_history import digest
from tests.e2e.harvest_check import articles, harvest_problems, stored_total, targets
from tests.support.processes import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "scripts/services/cassandra.sh")
NODES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
PORT = 9043
VICTIM = 3                                # node 3, 127.0.0.4; node 1 is the seed


def cassandra_sh(*args: str) -> None:
    subprocess.run([SCRIPT, *args], check=True, timeout=600)


@pytest.fixture
def ring():
    """A session on the 3-node cluster and a keyspace of the test's own at RF 3; the cluster is stopped
    and its data deleted afterwards."""
    cassandra_sh("up-cluster")
    # a fresh ring on a loaded machine can take longer than the driver's 10 s to agree on a new keyspace
    cluster = cluster_for(list(NODES), PORT, schema_event_refresh_window=0)
    cluster.max_schema_agreement_wait = 90
    try:
        session = cluster.connect()
        keyspace = f"bw_ring_{uuid.uuid4().hex[:8]}"
        apply_schema(session, keyspace, 3)
        yield session, keyspace
    finally:
        cluster.shutdown()
        cassandra_sh("down-cluster")


def node_pid(n: int) -> int:
    return int((ROOT / f".run/cassandra-ring/node{n}/cassandra.pid").read_text().strip())


def through(node: str):
    """A cluster whose every request is coordinated by one node, at LOCAL_QUORUM."""
    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([node]),
                               consistency_level=ConsistencyLevel.LOCAL_QUORUM, request_timeout=20)
    return Cluster([node], port=PORT, protocol_version=5, execution_profiles={EXEC_PROFILE_DEFAULT: profile})


def snapshot(session, keyspace: str, wiki: str, pages: dict) -> dict:
    store = CassandraRevisionStore(session, keyspace)
    return {title: ([(r.rev_id, r.sha1) for r in store.history(wiki, page_id)], store.page(wiki, page_id))
            for title, (page_id, _) in pages.items()}


def test_a_cassandra_node_killed_mid_harvest_loses_nothing(ring, make_cluster, mediawiki, record_timing):
    session, keyspace = ring
    cluster = make_cluster(spawn_env={"BW_CASSANDRA_HOSTS": ",".join(NODES), "BW_CASSANDRA_PORT": str(PORT),
                                      "BW_CASSANDRA_KEYSPACE": keyspace, "BW_HOST_DELAY_S": "0.05"}).start(spawns=3)
    hub, api, wiki = cluster.hub, mediawiki.api_url, wiki_key(mediawiki.api_url)
    titles = articles(mediawiki)
    pages = targets(mediawiki, titles)
    total = sum(len(mediawiki.expected.page(t).revisions) for t in titles)
    tenant = cluster.tenant("node-loss")
    started = time.monotonic()
    cluster.subscribe(tenant["id"], api, [{"title": t} for t in titles], content=True)

    # -- mid-harvest: a quarter of the revisions stored, then one Cassandra node dies ---------------------
    wait_for(lambda: stored_total(session, keyspace, api, pages) >= total // 4, 300, 0.5, "a quarter stored")
    os.kill(node_pid(VICTIM), 9)
    killed_at = stored_total(session, keyspace, api, pages)
    wait_for(lambda: all(s["last_rev_id"] == pages[s["title"]][1] for s in hub.subscriptions()), 600, 0.5,
             "the harvest to complete with a node down")
    took = time.monotonic() - started
    record_timing("3-node cluster, one node killed: harvest", took,
                  f"{total} revisions with content, node killed at {killed_at}")
    problems = harvest_problems(session, keyspace, api, mediawiki, pages)
    assert not problems, problems
    store = CassandraRevisionStore(session, keyspace)
    wrong = [(title, r.rev_id) for title, (page_id, _) in pages.items() for r in store.history(wiki, page_id)
             if digest(store.content(wiki, r.rev_id) or "") != r.sha1]
    assert not wrong, f"texts differing from their sha1: {wrong[:5]}"

    # -- the node returns: every node, as coordinator, reads the same at the chosen level ------------------
    cassandra_sh("start-node", str(VICTIM))
    wait_for(lambda: all(h.is_up for h in session.cluster.metadata.all_hosts()), 120, 0.5, "the node back up")
    sessions = [through(node).connect() for node in NODES]
    try:
        schema = "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s"
        wait_for(lambda: all(s.execute(schema, (keyspace,)).one() for s in sessions), 120, 0.5,
                 "every node to know the keyspace")
        views = [snapshot(s, keyspace, wiki, pages) for s in sessions]
    finally:
        for s in sessions:
            s.cluster.shutdown()
    assert views[0] == views[1] == views[2]
    assert sum(len(history) for history, _ in views[2].values()) == total
