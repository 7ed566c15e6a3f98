"""Node failure and hub restart, timed: a spawn killed -9 has its subscriptions running on the others
within a few poll intervals; a hub killed -9 and restarted finds everything running and restarts nothing;
the dead node, back, takes its share again and the harvest completes, equal to the source."""
import time
from datetime import datetime, timezone

import pytest

from blackwidow import router
from tests.e2e.cluster import INTERVAL_S, NODE_FAILURES
from tests.e2e.harvest_check import articles, harvest_problems, targets
from tests.e2e.test_partition import polled_since, restarts
from tests.support.processes import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def running_on(hub, ids: set[str], nodes: set[str], states=("running",)) -> bool:
    subs = [s for s in hub.subscriptions() if s["id"] in ids]
    return len(subs) == len(ids) and all(s["node"] in nodes and s["state"] in states for s in subs)


def test_dead_node_hub_restart_and_rejoin(make_cluster, mediawiki, cassandra_session, keyspace,
                                          record_timing):
    cluster = make_cluster(spawn_env={"BW_HOST_DELAY_S": "0.2"}).start(spawns=3)
    hub, api = cluster.hub, mediawiki.api_url
    titles = articles(mediawiki)
    pages = targets(mediawiki, titles)
    tenant = cluster.tenant("failures")
    cluster.subscribe(tenant["id"], api, [{"title": t} for t in titles], content=True)
    wait_for(lambda: {s["state"] for s in hub.subscriptions()} == {"running"}, 60, 0.2,
             "every subscription running")

    # -- a node dies: its work runs elsewhere ----------------------------------------------------------
    nodes = hub.nodes()
    victim = cluster.spawn_by_node(max(nodes, key=lambda n: n["subscriptions"])["id"])
    moved = {s["id"] for s in hub.subscriptions() if s["node"] == victim.node_id}
    survivors = {s.node_id for s in cluster.spawns} - {victim.node_id}
    victim.kill9()
    killed = time.monotonic()
    wait_for(lambda: running_on(hub, moved, survivors, ("assigned", "running")), 60, 0.05,
             "the dead node's subscriptions sent elsewhere")
    record_timing("dead node -> its work sent elsewhere", time.monotonic() - killed,
                  f"{len(moved)} subscriptions; {NODE_FAILURES} failed polls every {INTERVAL_S:g} s")
    wait_for(lambda: running_on(hub, moved, survivors), 60, 0.05,
             "the dead node's subscriptions running elsewhere")
    record_timing("dead node -> its work running elsewhere", time.monotonic() - killed,
                  "each source resolved its page again")
    held = {sub["id"]: sub["state"] for s in cluster.spawns if s is not victim
            for sub in s.proc.status()["subscriptions"]}
    # alive on a survivor: running, or waiting its turn for the identity's one request slot
    assert all(held.get(sub_id) in ("running", "waiting", "limit_reached") for sub_id in moved), held
    assert sorted(hub.live_nodes()) == sorted(survivors)

    # -- the hub dies and restarts: it finds everything running and restarts nothing ---------------------
    others = [s for s in cluster.spawns if s is not victim]
    before = {s.index: restarts(s) for s in others}
    hub.kill9()
    down, down_at = time.monotonic(), datetime.now(timezone.utc)
    hub.start("2")
    every = {s["id"] for s in hub.subscriptions()}
    wait_for(lambda: polled_since(hub, down_at) and running_on(hub, every, survivors), 60, 0.05,
             "every subscription running")
    record_timing("hub killed -> restarted, all running", time.monotonic() - down,
                  "gunicorn and scheduler start included")
    assert {s.index: restarts(s) for s in others} == before

    # -- the dead node comes back: a hard reload gives it its share; nothing is lost ---------------------
    victim.start()
    back = time.monotonic()
    everyone = sorted(s.node_id for s in cluster.spawns)

    def placed() -> bool:
        subs = hub.subscriptions()
        want = router.assign({s["id"]: s["source_uuid"] for s in subs}, everyone)
        return all(s["node"] == want[s["id"]] and s["state"] == "running" for s in subs)

    wait_for(placed, 60, 0.05, "routing over three nodes again")
    record_timing("node restarted -> its share running on it", time.monotonic() - back, "")
    wait_for(lambda: all(s["last_rev_id"] == pages[s["title"]][1] for s in hub.subscriptions()), 300, 0.5,
             "the harvest to complete")
    problems = harvest_problems(cassandra_session, keyspace, api, mediawiki, pages)
    assert not problems, problems
