"""A spawn whose wall clock is off, as on a host whose NTP failed (libfaketime, scripts/services/faketime.sh):
the hub reads every node's clock at its polls, gives that node no upstream slot while its clock is certainly
beyond BW_MAX_CLOCK_SKEW_S, shows it on GET /v1/nodes, and gives it turns again once its clock is back. The
harvest then completes, equal to the source."""
from pathlib import Path

import pytest

from tests.e2e.harvest_check import articles, harvest_problems, targets
from tests.support.processes import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
AHEAD_S = 2.0


def clocks(hub) -> dict[str, dict | None]:
    return {n["id"]: n["clock"] for n in hub.nodes()}


def test_a_spawn_whose_clock_is_off_gets_no_upstream_slot_until_it_is_back(
        make_cluster, mediawiki, cassandra_session, keyspace, tmp_path):
    assert FAKETIME.exists(), "libfaketime missing: scripts/services/faketime.sh up"
    offset = tmp_path / "faketime"
    offset.write_text(f"+{AHEAD_S:g}\n")
    cluster = make_cluster().start(spawns=1)
    hub, api = cluster.hub, mediawiki.api_url
    [good] = cluster.spawns
    # the offset is read from the file again every second: the test sets the clock right later. The monotonic
    # clock moves with it (libfaketime 0.9.10 makes Python's sleeps fail with EINVAL otherwise); its origin
    # is arbitrary, so only the step back when the clock is set right shows
    skewed = cluster.add_spawn(env={"LD_PRELOAD": str(FAKETIME), "FAKETIME_TIMESTAMP_FILE": str(offset),
                                    "FAKETIME_CACHE_DURATION": "1", "NO_FAKE_STAT": "1"})
    wait_for(lambda: len(hub.live_nodes()) == 2, 60, 0.2, "two live nodes")
    wait_for(lambda: (clocks(hub).get(skewed.node_id) or {}).get("trusted") is False, 30, 0.2,
             "the hub to read the skewed node's clock as off")
    seen = clocks(hub)
    assert seen[skewed.node_id]["offset_s"] == pytest.approx(AHEAD_S, abs=0.1)
    assert seen[good.node_id]["trusted"] and abs(seen[good.node_id]["offset_s"]) < 0.1

    titles = articles(mediawiki)
    pages = targets(mediawiki, titles)
    tenant = cluster.tenant("clocks")
    cluster.subscribe(tenant["id"], api, [{"title": t} for t in titles])
    wait_for(lambda: {s["node"] for s in hub.subscriptions()} == {good.node_id, skewed.node_id}, 60, 0.2,
             "subscriptions on both nodes")
    on_good = {s["id"] for s in hub.subscriptions() if s["node"] == good.node_id}

    def caught_up(ids: set[str] | None = None) -> bool:
        return all(s["last_rev_id"] == pages[s["title"]][1] for s in hub.subscriptions()
                   if ids is None or s["id"] in ids)

    wait_for(lambda: caught_up(on_good), 180, 0.5, "the trusted node's pages harvested")
    # all that time the skewed node never held the identity's slot, and read nothing
    identity = hub.get(f"/v1/identities/{api.split('/')[2]}")
    assert identity["windows"] and {w["node"] for w in identity["windows"]} == {good.node_id}
    held = {s["id"]: s for s in hub.subscriptions() if s["node"] == skewed.node_id}
    assert held and all(s["revisions"] == 0 for s in held.values()), held

    offset.write_text("+0\n")                  # NTP is back
    wait_for(lambda: (clocks(hub).get(skewed.node_id) or {}).get("trusted") is True, 30, 0.2,
             "the hub to trust the node's clock again")
    wait_for(caught_up, 180, 0.5, "every page harvested")
    assert harvest_problems(cassandra_session, keyspace, api, mediawiki, pages) == []
    identity = hub.get(f"/v1/identities/{api.split('/')[2]}")
    assert skewed.node_id in {w["node"] for w in identity["windows"]}
