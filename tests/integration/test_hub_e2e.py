"""The hub end to end with real processes: `blackwidow serve` (gunicorn), `blackwidow scheduler` and
three `spawn serve` nodes harvesting the local MediaWiki, on PostgreSQL. 100 subscriptions land where
routing says, a killed node's subscriptions move within ~BW_NODE_FAILURES poll intervals, and a hub
restart restarts nothing on the spawns."""
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from blackwidow import router
from tests.integration.coordination_support import SECRET, LoggedProcess, free_port, new_schema_url, wait_for
from tests.support.hub import HubProcesses

pytestmark = [pytest.mark.integration, pytest.mark.slow]
BIN = Path(sys.executable).parent
ADMIN_TOKEN = "e2e-admin-token"
INTERVAL_S = 1.0
FAILURES = 3
ACTIVE = ("assigned", "running", "waiting")
RESTARTS = ("subscriber.added", "subscriber.updated", "source.started", "source.stopped")


def make_hub(db_url: str, run_dir: Path) -> HubProcesses:
    return HubProcesses({"BW_DATABASE_URL": db_url, "BW_NODE_SECRET": SECRET, "BW_LOG_JSON": "true",
                         "BW_POLL_INTERVAL_S": str(INTERVAL_S), "BW_NODE_FAILURES": str(FAILURES),
                         "BW_WIKI_ALLOWLIST": "127.0.0.1:8780", "BW_WORKERS": "1"}, run_dir,
                        admin_token=ADMIN_TOKEN)


def spawn(hub: HubProcesses, run_dir: Path, index: int, *, wiki_host: str = "127.0.0.1:8780",
          env: dict | None = None) -> LoggedProcess:
    port = free_port()
    data = run_dir / f"spawn-{index}"
    data.mkdir()
    return LoggedProcess([str(BIN / "spawn"), "serve", "--hub", hub.url, "--bind", f"127.0.0.1:{port}"],
                         {"BW_NODE_SECRET": SECRET, "BW_DATA_DIR": str(data), "BW_LOG_JSON": "true",
                          "BW_CASSANDRA_HOSTS": "", "BW_WIKI_ALLOWLIST": wiki_host, **(env or {})},
                         run_dir / f"spawn-{index}.log")


def placed_as_routed(hub: HubProcesses, nodes: list[str]) -> bool:
    subs = hub.subscriptions()
    want = router.assign({s["id"]: s["source_uuid"] for s in subs}, nodes)
    return all(s["node"] == want[s["id"]] and s["state"] in ACTIVE for s in subs)


def test_hub_with_real_spawns(postgres_url, mediawiki, tmp_path):
    hub = make_hub(new_schema_url(postgres_url, "e2e"), tmp_path)
    spawns = []
    try:
        hub.start("first")
        spawns = [spawn(hub, tmp_path, i) for i in range(3)]
        wait_for(lambda: len(hub.live_nodes()) == 3, 60, 0.2)

        titles = [p.title for p in mediawiki.expected.pages if not p.title.startswith("Talk:")][:20]
        for t in range(5):        # 5 tenants x 20 articles: 100 subscriptions on 20 shared sources
            tenant = hub.post("/v1/tenants", {"name": f"tenant-{t}", "quota": None})
            hub.post("/v1/subscriptions/bulk", {"tenant_id": tenant["id"], "wiki": mediawiki.api_url,
                                                "content": False, "items": [{"title": x} for x in titles]})
        added = time.monotonic()
        nodes = hub.live_nodes()
        wait_for(lambda: placed_as_routed(hub, nodes), 60, 0.2)
        placed_s = time.monotonic() - added
        assert len(hub.subscriptions()) == 100

        victim = next(n for n in hub.get("/v1/nodes")["items"] if n["subscriptions"] > 0)
        victim_proc = spawns[[_port(s) for s in spawns].index(int(victim["url"].rsplit(":", 1)[1]))]
        victim_proc.stop(sig=9)
        killed = time.monotonic()
        survivors = [n for n in nodes if n != victim["id"]]
        wait_for(lambda: placed_as_routed(hub, survivors), 30, 0.2)
        moved_s = time.monotonic() - killed
        assert hub.live_nodes() == sorted(survivors)
        time.sleep(3 * INTERVAL_S)        # make before break: the moved copies' old ones go a tick later

        before = {i: _restarts(s) for i, s in enumerate(spawns) if s is not victim_proc}
        hub.stop()
        down = time.monotonic()
        hub.start("second")
        wait_for(lambda: "scheduler.leader" in hub.scheduler.events(), 30, 0.2)
        wait_for(lambda: all(_polled_since(n, down) for n in hub.get("/v1/nodes")["items"]
                             if n["state"] == "live"), 30, 0.2)
        back_s = time.monotonic() - down
        time.sleep(3 * INTERVAL_S)
        assert placed_as_routed(hub, survivors)
        assert {i: _restarts(spawns[i]) for i in before} == before        # nothing restarted on any spawn
        print(f"\ne2e: 100 subscriptions placed {placed_s:.1f} s after the bulk add; "
              f"node killed -> all moved in {moved_s:.1f} s ({moved_s / INTERVAL_S:.1f} intervals of {INTERVAL_S} s); "
              f"hub down -> nodes polled again in {back_s:.1f} s (gunicorn start included), 0 restarts")
    finally:
        for proc in spawns:
            proc.stop()
        hub.stop()


def _port(proc: LoggedProcess) -> int:
    return int(proc.proc.args[proc.proc.args.index("--bind") + 1].rsplit(":", 1)[1])


def _restarts(proc: LoggedProcess) -> int:
    return sum(1 for e in proc.events() if e in RESTARTS)


def _polled_since(node: dict, since_monotonic: float) -> bool:
    if not node["last_seen"]:
        return False
    seen = datetime.fromisoformat(node["last_seen"].replace("Z", "+00:00"))
    age = (datetime.now(timezone.utc) - seen).total_seconds()
    return age < time.monotonic() - since_monotonic
