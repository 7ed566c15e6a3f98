"""Bounded polls end to end: real `blackwidow serve` + `blackwidow scheduler` and a real spawn holding more
subscriptions than one poll request names (BW_POLL_PAGE_IDS=3) or one answer reports (BW_REPORT_PAGE_ITEMS=2).
Every poll succeeds, no subscription is dropped as an orphan however often the orphan timeout runs out, and after
the spawn restarts the hub's paged polls put everything back (docs/coordination.md, "Bounded polls")."""
import re
import time

import pytest
import requests

from blackwidow.poller import poll_once
from tests.integration.coordination_support import (  # noqa: F401 - fixtures
    LoggedProcess, add_subscriptions, assignments, client, db_url, expected_routes, free_port, held, hub_config,
    maker, new_schema_url, register, spawns, wait_for)
from tests.integration.test_hub_e2e import ACTIVE, BIN, SECRET, make_hub

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ORPHAN_S = 2.0       # the spawn's orphan timeout: it runs out several times while the test watches
SUBSCRIPTIONS = 10


def start_spawn(hub, run_dir, port: int, tag: str) -> LoggedProcess:
    data = run_dir / "spawn"
    data.mkdir(exist_ok=True)
    return LoggedProcess([str(BIN / "spawn"), "serve", "--hub", hub.url, "--bind", f"127.0.0.1:{port}"],
                         {"BW_NODE_SECRET": SECRET, "BW_DATA_DIR": str(data), "BW_LOG_JSON": "true",
                          "BW_CASSANDRA_HOSTS": "", "BW_WIKI_ALLOWLIST": "127.0.0.1:8780"},
                         run_dir / f"spawn-{tag}.log")


def ticks(metrics_port: int) -> dict[str, float]:
    """The scheduler's ticks so far, by scope (bw_hub_ticks_total)."""
    text = requests.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
    found = dict(re.findall(r'^bw_hub_ticks_total\{scope="(\w+)"\} (\S+)$', text, re.MULTILINE))
    return {scope: float(found.get(scope, 0)) for scope in ("scoped", "whole")}


def all_on(hub, node_id: str) -> bool:
    subs = hub.subscriptions()
    return len(subs) == SUBSCRIPTIONS and all(s["node"] == node_id and s["state"] in ACTIVE for s in subs)


def test_a_node_holding_more_than_one_bounded_poll_stays_live_orphans_nothing_and_recovers(
        postgres_url, mediawiki, tmp_path):
    hub = make_hub(new_schema_url(postgres_url, "paged"), tmp_path)
    metrics_port = free_port()
    hub.env.update({"BW_POLL_PAGE_IDS": "3", "BW_REPORT_PAGE_ITEMS": "2", "BW_ORPHAN_AFTER_S": str(ORPHAN_S),
                    "BW_SCHEDULER_METRICS_PORT": str(metrics_port)})
    port = free_port()
    node = None
    try:
        hub.start("first")
        node = start_spawn(hub, tmp_path, port, "first")
        wait_for(lambda: len(hub.live_nodes()) == 1, 60, 0.2)
        [node_id] = hub.live_nodes()
        titles = [p.title for p in mediawiki.expected.pages if not p.title.startswith("Talk:")][:SUBSCRIPTIONS // 2]
        for t in range(2):
            tenant = hub.post("/v1/tenants", {"name": f"paged-{t}", "quota": None})
            hub.post("/v1/subscriptions/bulk", {"tenant_id": tenant["id"], "wiki": mediawiki.api_url,
                                                "items": [{"title": x} for x in titles]})
        wait_for(lambda: all_on(hub, node_id), 60, 0.2, "every subscription running on the node")

        time.sleep(4 * ORPHAN_S)     # the orphan timeout runs out again and again between paged polls
        assert all_on(hub, node_id)
        assert "subscriber.orphaned" not in node.events()
        assert "node.poll_failed" not in hub.scheduler.events()
        [row] = hub.nodes()
        assert row["state"] == "live" and row["subscriptions"] == SUBSCRIPTIONS
        # the steady ticks looked only at what the spawn's report deltas said changed (docs/coordination.md,
        # "Steady ticks"); its restart below answers with a whole report, which adds the node's own ids
        before = ticks(metrics_port)
        time.sleep(3 * 2.0)
        after = ticks(metrics_port)
        assert after["scoped"] - before["scoped"] >= 2 and after["whole"] == before["whole"], (before, after)

        node.stop()
        node = start_spawn(hub, tmp_path, port, "second")     # same address: same node id, a new boot id
        wait_for(lambda: "node.restarted" in hub.scheduler.events(), 60, 0.2, "the hub seeing the restart")
        wait_for(lambda: all_on(hub, node_id) and node.events().count("subscriber.added") == SUBSCRIPTIONS,
                 60, 0.2, "every subscription put back on the restarted node")
        time.sleep(4 * ORPHAN_S)
        assert all_on(hub, node_id)
        assert "subscriber.orphaned" not in node.events()
        assert hub.live_nodes() == [node_id]
        # the restart was put right by ticks that looked at that node's ids, not at everything
        final = ticks(metrics_port)
        assert final["whole"] == after["whole"] and final["scoped"] > after["scoped"], (after, final)
    finally:
        if node is not None:
            node.stop()
        hub.stop()


def test_polls_travel_in_pages_and_a_spawn_without_pages_gets_the_whole_list(maker, spawns, client, db_url):
    """A node's list split into pages of one round each tick; a spawn of the version before pages refuses a
    paged list (422) and gets the whole list in one request at once, so a rolling upgrade fails no poll."""
    current, older = spawns(2)
    older.unpaged = True
    register(maker, [current, older])
    add_subscriptions(maker, 12)
    config = hub_config(db_url, BW_POLL_PAGE_IDS="2")
    for _ in range(3):
        result = poll_once(maker, client, config)
        assert result.failed == () and result.removed == ()
    want = expected_routes(maker, [current.node_id, older.node_id])
    assert held([current, older]) == want
    assert {sid: node for sid, (node, acked) in assignments(maker).items() if acked} == want

    last = [p for p in current.polls if p.page is not None and p.page.round == current.polls[-1].page.round]
    assert [p.page.page for p in last] == list(range(last[0].page.pages))
    assert sorted(i for p in last for i in p.assigned) == sorted(s for s, n in want.items() if n == current.node_id)
    assert max(len(p.assigned) for p in current.polls) <= 2
    assert older.polls[-1].page is None and sorted(older.polls[-1].assigned) == \
        sorted(s for s, n in want.items() if n == older.node_id)
