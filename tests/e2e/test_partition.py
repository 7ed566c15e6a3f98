"""Partition: the hub (its API and scheduler) frozen with SIGSTOP while spawns harvest.

Shorter than the detach time: nothing restarts (same boot ids, no source started or stopped, no detach).
Longer: every spawn stops its sources and detaches after BW_DETACH_AFTER_S, and writes nothing more; thawed,
they register again, the hub sends their work back and the harvest completes, equal to the source."""
import time
from datetime import datetime, timezone

import pytest

from tests.e2e.cluster import DETACH_AFTER_S, INTERVAL_S
from tests.e2e.harvest_check import articles, harvest_problems, stored_total, targets
from tests.support.processes import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHORT_FREEZE_S = 1.0
# the wiki identity's rate from the subscription to the end of the long freeze: slow enough that the harvest
# cannot end before that freeze however fast the machine, which that phase needs (it checks that nothing more
# is written). Held from the start: at the anonymous limits most of the harvest is over before its
# subscriptions have all started
HELD_BACK_PER_S = 0.5
LONG_FREEZE_S = DETACH_AFTER_S + 3
RESTARTS = ("subscriber.added", "source.started", "source.stopped", "node.detached")
STARTED = {"running", "waiting"}


def restarts(spawn) -> int:
    return sum(1 for e in spawn.events() if e in RESTARTS)


def polled_since(hub, since: datetime, times: int = 1) -> bool:
    """Every live node's last successful poll is later than `since` plus `times - 1` poll intervals."""
    nodes = [n for n in hub.nodes() if n["state"] == "live"]
    cutoff = since.timestamp() + (times - 1) * INTERVAL_S
    seen = [n["last_seen"] and datetime.fromisoformat(n["last_seen"].replace("Z", "+00:00")) for n in nodes]
    return bool(nodes) and all(at and at.timestamp() > cutoff for at in seen)


def started(states: set[str]) -> bool:
    """Every subscription fetching, or waiting its turn in the identity's budget (one request in flight for
    the whole cluster keeps most of them waiting at any moment)."""
    return bool(states) and states <= STARTED


def started_on_spawns(cluster) -> set[str]:
    """Ids of the subscriptions the spawns themselves report started (GET /v1/status counts as hub contact:
    only for use while the hub is up)."""
    return {sub["id"] for s in cluster.spawns for sub in s.proc.status()["subscriptions"]
            if sub["state"] in STARTED}


def test_hub_frozen_shorter_then_longer_than_the_detach_time(make_cluster, mediawiki, cassandra_session,
                                                             keyspace, record_timing):
    cluster = make_cluster(spawn_env={"BW_HOST_DELAY_S": "0.3"}).start(spawns=3)
    hub, api, spawns = cluster.hub, mediawiki.api_url, cluster.spawns
    titles = articles(mediawiki)
    pages = targets(mediawiki, titles)
    total = sum(len(mediawiki.expected.page(t).revisions) for t in titles)
    identity = f"/v1/identities/{api.split('/')[2]}"
    hub.put(identity, {"per_s": HELD_BACK_PER_S})            # the host's defaults for every other limit
    tenant = cluster.tenant("partition")
    cluster.subscribe(tenant["id"], api, [{"title": t} for t in titles], content=True)
    wait_for(lambda: started({s["state"] for s in hub.subscriptions()}), 60, 0.2, "every subscription started")
    wait_for(lambda: stored_total(cassandra_session, keyspace, api, pages) > 0, 60, 0.2,
             "the first revisions")

    # -- shorter than the detach time: nothing restarts -------------------------------------------
    boots = {s.index: s.proc.status()["boot_id"] for s in spawns}
    before = {s.index: restarts(s) for s in spawns}
    hub.freeze()
    time.sleep(SHORT_FREEZE_S)
    hub.thaw()
    thawed = datetime.now(timezone.utc)
    wait_for(lambda: polled_since(hub, thawed, times=3), 30, 0.2, "three polls of every node after the thaw")
    assert {s.index: s.proc.status()["boot_id"] for s in spawns} == boots
    assert {s.index: restarts(s) for s in spawns} == before
    assert all(s.health()["attached"] and s.proc.metric("bw_spawn_detaches_total") == 0 for s in spawns)

    # -- longer than the detach time: detach, stop writing, come back ---------------------------------
    stored_at_freeze = stored_total(cassandra_session, keyspace, api, pages)
    print(f"\nlong freeze at {stored_at_freeze}/{total} stored")
    assert stored_at_freeze < total, "the harvest ended before the partition"
    hub.freeze()
    frozen = time.monotonic()
    detached: dict[int, float] = {}

    def all_detached() -> bool:
        for s in spawns:
            if s.index not in detached and not s.health()["attached"]:
                detached[s.index] = time.monotonic() - frozen
        return len(detached) == len(spawns)

    try:
        wait_for(all_detached, DETACH_AFTER_S + 10, 0.05, "every spawn to detach")
        assert all(s.health()["sources"] == 0 == s.health()["subscribers"] for s in spawns)
        written = [s.proc.metric("bw_spawn_revisions_written_total") for s in spawns]
        stored = stored_total(cassandra_session, keyspace, api, pages)
        time.sleep(max(1.5, frozen + LONG_FREEZE_S - time.monotonic()))     # absence of writes takes waiting
        assert [s.proc.metric("bw_spawn_revisions_written_total") for s in spawns] == written
        assert stored_total(cassandra_session, keyspace, api, pages) == stored
    finally:
        hub.thaw()
    thawed_at, thawed = time.monotonic(), datetime.now(timezone.utc)
    hub.put(identity, {})                                     # the host's defaults again
    record_timing("detach delay (hub frozen -> spawn detached)", max(detached.values()),
                  f"BW_DETACH_AFTER_S={DETACH_AFTER_S:g}, poll every {INTERVAL_S:g} s; "
                  f"first spawn {min(detached.values()):.2f} s")

    wait_for(lambda: all(s.health()["attached"] for s in spawns) and len(hub.live_nodes()) == 3,
             60, 0.1, "every spawn registered again")
    ids = {s["id"] for s in hub.subscriptions()}
    wait_for(lambda: started_on_spawns(cluster) == ids and polled_since(hub, thawed)
             and started({s["state"] for s in hub.subscriptions()}), 60, 0.1,
             "every subscription started again")
    record_timing("hub thawed -> all started again", time.monotonic() - thawed_at, "after a detach")
    assert all(s.proc.metric("bw_spawn_detaches_total") == 1 for s in spawns)

    wait_for(lambda: all(s["last_rev_id"] == pages[s["title"]][1] for s in hub.subscriptions()), 300, 0.5,
             "the harvest to complete")
    assert {s["state"] for s in hub.subscriptions()} == {"running"}
    problems = harvest_problems(cassandra_session, keyspace, api, mediawiki, pages)
    assert not problems, problems
