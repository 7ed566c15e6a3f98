"""No spawn detaches because the hub is busy: real `blackwidow serve` + `blackwidow scheduler` + a real spawn,
with a spawn that answers its polls slowly in the same deployment, so that every tick lasts longer than the
detach timeout. Between polls the scheduler's keepalives keep the real spawn attached (docs/coordination.md,
"Liveness")."""
import threading
import time

import pytest
import requests

from tests.integration.coordination_support import SECRET, new_schema_url, wait_for
from tests.integration.spawn_double import SpawnDouble
from tests.integration.test_hub_e2e import make_hub, spawn

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DETACH_S = 3.0
SLOW_POLL_S = 4.0


def test_a_tick_longer_than_the_detach_timeout_detaches_no_spawn(postgres_url, mediawiki, tmp_path):
    hub = make_hub(new_schema_url(postgres_url, "keepalive"), tmp_path)
    hub.env.update({"BW_DETACH_AFTER_S": str(DETACH_S), "BW_ORPHAN_AFTER_S": str(DETACH_S)})
    slow = SpawnDouble(SECRET).start()
    polled_at: list[float] = []
    report = slow.report

    def slow_report():
        polled_at.append(time.monotonic())
        time.sleep(SLOW_POLL_S)        # under the hub's read timeout: the poll succeeds, the tick waits for it
        return report()

    slow.report = slow_report
    node = None
    try:
        hub.start("first")
        node = spawn(hub, tmp_path, 0)
        requests.post(f"{hub.url}/v1/nodes", json={"url": slow.url},
                      headers={"Authorization": f"Bearer {SECRET}"}, timeout=5).raise_for_status()
        wait_for(lambda: len(hub.live_nodes()) == 2, 60, 0.2)
        tenant = hub.post("/v1/tenants", {"name": "keepalive", "quota": None})
        hub.post("/v1/subscriptions/bulk", {"tenant_id": tenant["id"], "wiki": mediawiki.api_url,
                                            "items": [{"title": p.title} for p in mediawiki.expected.pages[:6]]})
        registered = {n["id"]: n["registered_at"] for n in hub.nodes()}
        threading.Event().wait(4 * SLOW_POLL_S)
        ticks = [b - a for a, b in zip(polled_at, polled_at[1:])]
        assert len(ticks) >= 2 and min(ticks) >= DETACH_S, ticks     # every tick outlasted the detach timeout
        assert "node.detached" not in node.events()
        assert {n["id"]: n["registered_at"] for n in hub.nodes()} == registered    # never re-registered
        assert any(s["state"] in ("running", "assigned") for s in hub.subscriptions())
    finally:
        if node is not None:
            node.stop()
        slow.stop()
        hub.stop()
