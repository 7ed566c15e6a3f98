"""Security, end to end on real processes: admin calls without or with a wrong token and spawn control calls
without the node secret get 401; wiki URLs outside the allowlist (loopback not listed exactly, the cloud
metadata address, private ranges, their disguises) get 422 and nothing ever connects to them; neither secret
appears in any process's log (at DEBUG), in a real poll or registration exchange, or in any /metrics; and
the ingest path sends Cassandra prepared statements only."""
import socket
import threading
import time
import uuid

import pytest
import requests

from shared.config import SpawnConfig
from shared.hashing import source_uuid
from shared.revisions.cassandra_store import CassandraRevisionStore, cluster_for
from shared.wire import SubscriptionSpec
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.wikis import Wikis
from tests.e2e.cluster import INTERVAL_S, LOCAL_WIKI
from tests.e2e.proxies import Proxy
from tests.support.processes import free_port, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# wildcards that match internal addresses: only exact entries may let those through
ALLOWLIST = f"{LOCAL_WIKI},*.wikipedia.org,127.*,10.*,172.16.*,192.168.*,169.254.*,100.64.*,localhost*,0.*"


class Listener:
    """A TCP port on 127.0.0.1 that records every connection made to it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections: list[tuple] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except OSError:
                continue
            self.connections.append(peer)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def refused_wikis(port: int) -> list[str]:
    return [
        "http://127.0.0.1/api.php", "https://127.0.0.1/api.php", f"http://127.0.0.1:{port}/api.php",
        f"http://127.0.0.2:{port}/api.php", f"http://localhost:{port}/api.php",
        f"http://LOCALHOST:{port}/api.php",
        f"http://wiki.localhost:{port}/api.php", f"http://0.0.0.0:{port}/api.php", f"http://0:{port}/api.php",
        f"http://2130706433:{port}/api.php", f"http://0x7f.1:{port}/api.php",
        f"http://0x7f000001:{port}/api.php",
        f"http://017700000001:{port}/api.php", f"http://127.1:{port}/api.php", f"http://[::1]:{port}/api.php",
        f"http://[::ffff:127.0.0.1]:{port}/api.php", "http://169.254.169.254/api.php",
        "http://169.254.169.254/latest/meta-data/api.php", "http://[fd00:ec2::254]/api.php",
        "http://10.0.0.1/w/api.php", "http://10.255.255.254:8080/api.php", "http://172.16.0.1/api.php",
        "http://172.31.255.1/api.php", "http://192.168.1.1/api.php", "http://100.64.0.1/api.php",
        "http://224.0.0.1/api.php", "http://255.255.255.255/api.php",
        f"http://127.0.0.1:8780@127.0.0.1:{port}/api.php", f"http://user:pw@{LOCAL_WIKI}/api.php",
        f"http://127.0.0.1:{port}\\@{LOCAL_WIKI}/api.php", f"http://127.0.0.1:{port}#@{LOCAL_WIKI}/api.php",
        f"http://{LOCAL_WIKI}/api.php?redirect=http://127.0.0.1:{port}/",
        f"http://127.0.0.1%3A{port}/api.php",
        f"http://127.0.0.1:{port}%2F@{LOCAL_WIKI}/api.php", f"http://{LOCAL_WIKI}/index.php",
        "https://evil.example.com/w/api.php", "https://en.wikipedia.org:8443/w/api.php",
        "ftp://en.wikipedia.org/w/api.php", "file:///etc/passwd", "gopher://127.0.0.1:8780/api.php",
        f"//127.0.0.1:{port}/api.php", "", " ", f"http://127.0.0.1:{port}/api.php\n",
    ]


def _error(resp: requests.Response, status: int, field) -> dict:
    assert resp.status_code == status, (resp.request.method, resp.request.url, resp.status_code,
                                        resp.text[:300])
    error = resp.json()["error"]
    assert error["field"] == field, error
    return error


def test_auth_allowlist_and_secrets_on_real_processes(make_cluster, mediawiki):
    listener = Listener()
    spawn_port, hub_proxy = free_port(), None
    poll_proxy = Proxy(f"http://127.0.0.1:{spawn_port}")     # what the hub sends this spawn, and its answers
    try:
        cluster = make_cluster(allowlist=ALLOWLIST, hub_env={"BW_LOG_LEVEL": "DEBUG"},
                               spawn_env={"BW_LOG_LEVEL": "DEBUG"})
        cluster.start(spawns=1)
        hub_proxy = Proxy(cluster.hub.url)                          # what this spawn sends the hub
        watched = cluster.add_spawn(port=spawn_port, advertise_url=poll_proxy.url, hub_url=hub_proxy.url)
        wait_for(lambda: len(cluster.hub.live_nodes()) == 2, 60, 0.2, "two live nodes")
        hub, admin, node = cluster.hub, cluster.admin_token, cluster.node_secret
        tenant = cluster.tenant("secure", quota=10_000)         # its polls carry quota leases too
        allowed = cluster.subscribe(tenant["id"], mediawiki.api_url,
                                    [{"title": "Cobweb"}, {"title": "Spinneret"}, {"title": "Hub and spoke"}])

        # -- admin API: every admin operation refuses a missing or wrong token ----------------------------
        doc = requests.get(f"{hub.url}/openapi.json", timeout=10).json()
        some_id = str(uuid.uuid4())
        wrong = [{"Authorization": value} for value in (
            "", "Bearer", f"Bearer {admin}x", f"Bearer {admin[:-1]}", admin, f"Basic {admin}",
            f"Bearer {node}", f"Bearer  {admin} extra")] + [{}]
        admin_ops = 0
        for path, ops in doc["paths"].items():
            for method, op in ops.items():
                security = op.get("security", doc["security"])
                if not security:
                    continue
                secret = admin if "adminToken" in security[0] else node
                url = hub.url + path.replace("{tenant_id}", some_id).replace("{sub_id}", some_id) \
                    .replace("{node_id}", some_id).replace("{set_id}", some_id)
                for headers in wrong:
                    if headers.get("Authorization", "").endswith(f" {secret}"):
                        continue            # that is the right secret for this operation
                    resp = requests.request(method.upper(), url, json={}, headers=headers, timeout=10)
                    _error(resp, 401, "Authorization")
                    assert admin not in resp.text and node not in resp.text
                admin_ops += secret == admin
        assert admin_ops >= 16

        # -- spawn control calls refuse a missing or wrong node secret ------------------------------------
        spec = SubscriptionSpec(id=str(uuid.uuid4()), tenant_id=tenant["id"], wiki=mediawiki.api_url,
                                source_uuid=str(source_uuid(mediawiki.api_url, "Cobweb")), title="Cobweb")
        spawn_url = watched.url
        for headers in ({}, {"Authorization": f"Bearer {admin}"}, {"Authorization": f"Bearer {node}x"},
                        {"Authorization": node}, {"Authorization": f"Basic {node}"}):
            for method, path, body in (("POST", "/v1/subscriptions", {"drops": [], "puts": [spec.to_dict()]}),
                                       ("POST", "/v1/subscriptions", {"drops": [spec.id], "puts": []}),
                                       ("POST", "/v1/status", {"node_id": watched.node_id, "assigned": []}),
                                       ("GET", "/v1/status", None)):
                resp = requests.request(method, spawn_url + path, json=body, headers=headers, timeout=10)
                _error(resp, 401, "Authorization")
        held = {s["id"] for s in watched.proc.status()["subscriptions"]}
        assert spec.id not in held                                   # the refused sends ran nothing

        # -- wikis outside the allowlist: 422, nothing created, nobody connects ------------------------------
        for wiki in refused_wikis(listener.port):
            body = {"tenant_id": tenant["id"], "wiki": wiki, "title": "Main Page"}
            _error(hub.http.post(f"{hub.url}/v1/subscriptions", json=body, timeout=10), 422, "wiki")
            error = _error(hub.http.post(f"{hub.url}/v1/subscriptions/bulk", timeout=10, json={
                "tenant_id": tenant["id"], "items": [{"title": "Cobweb", "wiki": mediawiki.api_url},
                                                     {"title": "Main Page", "wiki": wiki}]}), 422, "items")
            assert [(e["index"], e["field"]) for e in error["items"]] == [(1, "wiki")]
        resp = hub.http.patch(f"{hub.url}/v1/subscriptions/{allowed[0]['id']}", timeout=10,
                              json={"wiki": f"http://127.0.0.1:{listener.port}/api.php"})
        _error(resp, 422, "wiki")                                    # a subscription's wiki cannot be changed
        assert sorted(s["id"] for s in hub.subscriptions()) == sorted(s["id"] for s in allowed)

        wait_for(lambda: all(s["state"] == "running" and s["last_rev_id"] for s in hub.subscriptions()),
                 60, 0.2, "the allowed subscriptions harvested")
        wait_for(lambda: len([ex for ex in poll_proxy.exchanges if ex.path == "/v1/status"]) >= 10, 30,
                 INTERVAL_S, "ten polls of the watched spawn")
        assert listener.connections == [], listener.connections

        # -- secrets: only ever in the Authorization header ------------------------------------------------
        polls = [ex for ex in poll_proxy.exchanges if ex.path == "/v1/status" and ex.method == "POST"]
        puts = [ex for ex in poll_proxy.exchanges if ex.path.startswith("/v1/subscriptions")]     # sends
        registrations = [ex for ex in hub_proxy.exchanges if ex.path == "/v1/nodes" and ex.method == "POST"]
        assert polls and registrations and all(ex.status == 200 for ex in polls)
        assert any(b'"leases"' in ex.request_body for ex in polls)
        for ex in polls + puts + registrations:
            assert ex.request_headers["Authorization"] == f"Bearer {node}"    # the real exchange was captured
        exchanged = {f"{ex.method} {ex.path} #{i} {part}": text
                     for i, ex in enumerate(poll_proxy.exchanges + hub_proxy.exchanges)
                     for part, text in (("request body", ex.request_body.decode(errors="replace")),
                                        ("response body", ex.response_body.decode(errors="replace")),
                                        ("response headers", str(ex.response_headers)))}
        # /metrics names tenants, quotas and usage: never on a port the ALB or the hub reaches
        assert requests.get(f"{hub.url}/metrics", timeout=10).status_code == 404
        assert all(requests.get(f"{s.url}/metrics", timeout=10).status_code == 404 for s in cluster.spawns)
        metrics = {"hub /metrics": requests.get(f"{hub.metrics_url}/metrics", timeout=10).text,
                   "scheduler /metrics": requests.get(f"http://127.0.0.1:{cluster.metrics_port}/metrics",
                                                      timeout=10).text}
        for spawn in cluster.spawns:
            metrics[f"spawn {spawn.index} /metrics"] = requests.get(f"{spawn.proc.metrics_url}/metrics",
                                                                    timeout=10).text
            metrics[f"spawn {spawn.index} /health"] = requests.get(f"{spawn.url}/health", timeout=10).text
        metrics["hub /health"] = requests.get(f"{hub.url}/health", timeout=10).text
        metrics["hub /v1/dashboard"] = hub.http.get(f"{hub.url}/v1/dashboard", timeout=10).text
        assert all(metrics.values()) and "bw_hub_polls_total" in metrics["scheduler /metrics"]
        assert cluster.leaks({**exchanged, **metrics}) == []
        # the searched logs are real: the scheduler's DEBUG ticks, both spawns' registrations
        assert "tick.done" in hub.scheduler.events()
        assert all("node.registered" in spawn.events() for spawn in cluster.spawns)
    finally:
        listener.close()
        poll_proxy.close()
        if hub_proxy is not None:
            hub_proxy.close()


def test_ingest_path_sends_prepared_statements_only(mediawiki, keyspace):
    """A driver-level spy on the session the revision store uses, through a whole harvest and a resume."""
    cluster = cluster_for(["127.0.0.1"], 9042)
    session = cluster.connect()
    messages: list[str] = []
    statements = [0]                                        # rows carried, batched or not
    execute_async = session.execute_async

    def spy(query, *args, **kwargs):
        future = execute_async(query, *args, **kwargs)
        message = future.message
        kind = type(message).__name__                       # ExecuteMessage = a prepared statement
        if kind == "BatchMessage":
            # a batch is prepared only if every statement in it is (is_prepared, id, values)
            kind = "PreparedBatch" if all(q[0] for q in message.queries) else "UnpreparedBatch"
        statements[0] += len(message.queries) if kind.endswith("Batch") else 1
        messages.append(kind)
        return future

    session.execute_async = spy
    config = SpawnConfig.from_env({"BW_NODE_SECRET": "unused", "BW_HOST_DELAY_S": "0",
                                   "BW_USER_AGENT": mediawiki.user_agent})
    try:
        store = CassandraRevisionStore(session, keyspace)
        for run in range(2):                    # a harvest, then a restart that resumes from what is stored
            wikis = Wikis(config, http=mediawiki.session(), store=store, metrics=SpawnMetrics())
            registry = Registry(wikis.make_source, orphan_after_s=60)
            spec = SubscriptionSpec(id=f"cql-{run}", tenant_id="t", wiki=mediawiki.api_url,
                                    title="Spider silk", content=True,
                                    source_uuid=str(source_uuid(mediawiki.api_url, "Spider silk")))
            registry.upsert(spec)
            source = registry.source(spec.source_uuid)
            wait_for(lambda: source.complete, 120, 0.05, "the harvest")
            registry.clear()
            wikis.stop()
        time.sleep(0.1)
    finally:
        cluster.shutdown()
    assert statements[0] > 700 * 4
    assert set(messages) <= {"ExecuteMessage", "PreparedBatch"}, {m: messages.count(m) for m in set(messages)}
