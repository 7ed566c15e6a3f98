"""A real `blackwidow serve` (gunicorn, two workers) on a free port: it migrates its store, answers
/health, refuses unauthenticated calls, serves the admin CLI, and sums request metrics over workers."""
import os
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from tests.fixtures.hub import ADMIN, ADMIN_TOKEN, LOCAL_WIKI, NODE_SECRET
from tests.support.hub import HubProcesses
from tests.support.processes import free_port

pytestmark = pytest.mark.integration


def serve_only(env: dict, run_dir: Path) -> HubProcesses:
    """`blackwidow serve` with two gunicorn workers and no scheduler, serving when this returns."""
    hub = HubProcesses({"BW_NODE_SECRET": NODE_SECRET, "BW_WIKI_ALLOWLIST": "127.0.0.1:8780", **env}, run_dir,
                       admin_token=ADMIN_TOKEN)
    hub.start_api("serve", workers=2)
    return hub


@pytest.fixture(params=["sqlite-default", "postgresql"])
def hub(request, tmp_path):
    env = {"BW_DATA_DIR": str(tmp_path / "data")}
    if request.param == "postgresql":
        base = request.getfixturevalue("postgres_url")
        schema = f"serve_{os.getpid()}_{free_port()}"
        engine = sa.create_engine(base)
        with engine.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        engine.dispose()
        env["BW_DATABASE_URL"] = f"{base}?options=-csearch_path%3D{schema}"
    else:
        env["BW_DATABASE_URL"] = ""        # unset: the embedded SQLite store under BW_DATA_DIR
    hub = serve_only(env, tmp_path)
    try:
        yield hub
    finally:
        hub.stop()


def test_serve_answers_health_auth_and_admin_calls(hub, tmp_path):
    health = requests.get(hub.url + "/health", timeout=5)        # serving, but nothing would reach a spawn
    assert (health.status_code, health.json()["database"], health.json()["scheduler"]) == (503, "ok", "absent")
    refused = requests.get(hub.url + "/v1/tenants", timeout=5)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"

    rc, tenant = hub.admin("tenants", "create", "--name", "served", "--quota", "100")
    assert rc == 0 and tenant["name"] == "served"
    rc, added = hub.admin("subs", "bulk", "--tenant", tenant["id"], "--wiki", LOCAL_WIKI, "-",
                          stdin="Main Page\nSecond page\n")
    assert rc == 0 and added["count"] == 2
    rc, err = hub.admin("subs", "add", "--tenant", tenant["id"], "--wiki", "http://169.254.169.254/api.php",
                        "--title", "X")
    assert rc == 1 and err["error"]["field"] == "wiki"
    rc, listed = hub.admin("subs", "list", "--all")
    assert rc == 0 and [s["title"] for s in listed["items"]] == ["Main Page", "Second page"]

    registered = requests.post(hub.url + "/v1/nodes", json={"url": "http://127.0.0.1:8701"},
                               headers={"Authorization": f"Bearer {NODE_SECRET}"}, timeout=5)
    assert registered.status_code == 201

    for _ in range(20):                                # spread over both workers
        assert requests.get(hub.url + "/v1/nodes", headers=ADMIN, timeout=5).status_code == 200
    assert requests.get(hub.url + "/metrics", timeout=5).status_code == 404         # not on the API port
    metrics = requests.get(hub.metrics_url + "/metrics", timeout=5).text
    line = next(row for row in metrics.splitlines()
                if row.startswith('bw_hub_http_requests_total{method="GET",route="/v1/nodes",status="200"}'))
    assert float(line.split()[-1]) == 20.0
    assert ADMIN_TOKEN not in metrics and NODE_SECRET not in metrics

    data_dir = Path(hub.env["BW_DATA_DIR"])
    hub.stop()
    assert not list(data_dir.glob("prometheus-hub.*"))     # the multiprocess directory is cleaned up


def test_serve_subscribes_a_list_of_titles_item_by_item(hub):
    """`subs pages` through gunicorn on each store: thousands of titles in one call, then a second list
    whose refused titles come back by index while the rest are created."""
    rc, tenant = hub.admin("tenants", "create", "--name", "lists")
    assert rc == 0
    titles = "".join(f"Page {i}\n" for i in range(5000))
    rc, first = hub.admin("subs", "pages", "--tenant", tenant["id"], "--wiki", LOCAL_WIKI, "-", stdin=titles)
    assert rc == 0 and len(first["created"]) == 5000 and first["refused"] == []
    rc, second = hub.admin("subs", "pages", "--tenant", tenant["id"], "--wiki", LOCAL_WIKI, "-",
                           stdin="page 7\nFresh\nfresh\nBad|title\nOther_one\n")
    assert rc == 3                                       # some refused: the answer still lists what was created
    assert [(c["index"], c["title"]) for c in second["created"]] == [(1, "Fresh"), (4, "Other_one")]
    assert [(r["index"], r["reason"]) for r in second["refused"]] == [
        (0, "already_subscribed"), (2, "duplicate"), (3, "malformed_title")]
    assert second["refused"][0]["subscription_id"] == first["created"][7]["id"]

    status_of = requests.post(hub.url + "/v1/subscriptions", headers=ADMIN, timeout=30, json={
        "kind": "pages", "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "titles": ["Fresh", "Another"]})
    assert status_of.status_code == 207
    too_long = requests.post(hub.url + "/v1/subscriptions", headers=ADMIN, timeout=30, json={
        "kind": "pages", "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "titles": ["T"] * 10_001})
    assert (too_long.status_code, too_long.json()["error"]["field"]) == (422, "titles")
    not_json = requests.post(hub.url + "/v1/subscriptions", headers={**ADMIN, "Content-Type": "application/json"},
                             data=b'{"kind": "pages", "titles": [', timeout=30)
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "bad_request"

    rc, listed = hub.admin("subs", "list", "--all", "--tenant", tenant["id"])
    assert rc == 0 and len(listed["items"]) == 5003
