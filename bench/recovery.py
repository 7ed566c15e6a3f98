"""7. Recovery with default settings, real processes: a hub (API + scheduler on PostgreSQL) and three
spawns (Cassandra) harvest the local wiki. Then
  dead spawn:   SIGKILL one spawn; clock until every subscription runs on the surviving spawns
                (their own status reports) and the hub shows it so;
  hub restart:  SIGKILL the API and the scheduler, start both again at once; clock until the new
                scheduler has polled every spawn and every subscription is running again.
Only the timing-neutral settings are set (addresses, secrets, the wiki allowlist); poll interval,
failure count and detach time are the defaults.

    .venv/bin/python -m bench.recovery
"""
import os
import secrets
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from bench.common import (CASSANDRA_HOSTS, LOCAL_WIKI, ROOT, USER_AGENT, cassandra_keyspace, heading,
                          pg_database, seeded_articles, table, verdict)
from blackwidow.admin_client import AdminClient
from shared.config import HubConfig
from shared.hashing import wiki_key
from shared.http import make_session
from tools.demo import SERVING, Processes, free_port, wait_http

GOALS = {"dead spawn": 20.0, "hub restart": 30.0}
SPAWNS = 3
BIN = Path(sys.executable).parent


class Cluster:
    def __init__(self, env: dict, log_dir: Path):
        self.env = env
        self.procs = Processes(log_dir)
        self.http = make_session(USER_AGENT)
        self.admin = {"Authorization": f"Bearer {env['BW_ADMIN_TOKEN']}"}
        self.node_auth = {"Authorization": f"Bearer {env['BW_NODE_SECRET']}"}
        self.hub = f"http://127.0.0.1:{free_port(0)}"
        self.spawns: dict[str, object] = {}      # url -> Popen
        self.metrics: dict[str, str] = {}        # url -> its metrics listener's url
        self.generation = 0

    def start_hub(self) -> None:
        self.generation += 1
        self.procs.start(f"hub{self.generation}", [str(BIN / "blackwidow"), "serve", "--bind",
                                                   self.hub.removeprefix("http://")], self.env)
        self.procs.start(f"scheduler{self.generation}", [str(BIN / "blackwidow"), "scheduler"], self.env)

    def start(self, spawns: int) -> None:
        """Migrate, start hub and scheduler, then `spawns` spawns, each answering /health."""
        subprocess.run([str(BIN / "blackwidow"), "migrate"], env=self.env, cwd=ROOT, capture_output=True,
                       check=True)
        self.start_hub()
        wait_http(self.hub + "/health", self.procs, statuses=SERVING)    # healthy once the scheduler ticks
        for i in range(spawns):
            self.start_spawn(i + 1)

    def kill_hub(self) -> None:
        for name, proc in self.procs.procs:
            if name in (f"hub{self.generation}", f"scheduler{self.generation}") and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def start_spawn(self, i: int) -> None:
        url = f"http://127.0.0.1:{free_port(0)}"
        self.metrics[url] = f"http://127.0.0.1:{free_port(0)}"       # its /metrics listener
        env = {**self.env, "BW_METRICS_PORT": self.metrics[url].rsplit(":", 1)[1]}
        self.spawns[url] = self.procs.start(f"spawn{i}", [str(BIN / "spawn"), "serve", "--hub", self.hub,
                                                          "--bind", url.removeprefix("http://")], env)
        wait_http(url + "/health", self.procs)

    def kill_spawn(self, url: str) -> None:
        proc = self.spawns.pop(url)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.procs.procs = [(n, p) for n, p in self.procs.procs if p is not proc]

    # -- views --------------------------------------------------------------------------------
    def subscriptions(self) -> list[dict]:
        client = AdminClient(self.http, self.hub, self.env["BW_ADMIN_TOKEN"])
        return list(client.pages("/v1/subscriptions", {"limit": 1000}))

    def nodes(self) -> list[dict]:
        return self.http.get(self.hub + "/v1/nodes", headers=self.admin, timeout=10).json()["items"]

    def running_on_spawns(self) -> dict[str, str]:
        """{subscription id: spawn url} of what the live spawns themselves report running."""
        out = {}
        for url in self.spawns:
            report = self.http.get(url + "/v1/status", headers=self.node_auth, timeout=10).json()
            out.update({s["id"]: url for s in report["subscriptions"] if s["state"] == "running"})
        return out

    def boot_ids(self) -> dict[str, str]:
        return {url: self.http.get(url + "/v1/status", headers=self.node_auth, timeout=10).json()["boot_id"]
                for url in self.spawns}


def first_times(checks: dict, timeout: float, step: float = 0.2) -> dict[str, float]:
    """{name: seconds until checks[name]() first held}, polling all every `step` until all have held."""
    started = time.monotonic()
    out: dict[str, float] = {}
    while len(out) < len(checks):
        for name, check in checks.items():
            if name not in out:
                try:
                    if check():
                        out[name] = time.monotonic() - started
                except Exception:        # the hub restarting refuses connections for a moment
                    pass
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"not reached within {timeout:.0f} s: {sorted(set(checks) - set(out))}")
        time.sleep(step)
    return out


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def main() -> None:
    titles = [p.title for p in seeded_articles()]
    log_dir = ROOT / ".run/bench/recovery"
    log_dir.mkdir(parents=True, exist_ok=True)
    with pg_database("bw_bench_recovery") as db_url, cassandra_keyspace("bw_bench_recovery") as (_, keyspace):
        env = dict(os.environ, BW_DATABASE_URL=db_url, BW_ADMIN_TOKEN=secrets.token_urlsafe(16),
                   BW_NODE_SECRET=secrets.token_urlsafe(16), BW_WIKI_ALLOWLIST=wiki_key(LOCAL_WIKI),
                   BW_CASSANDRA_HOSTS=",".join(CASSANDRA_HOSTS), BW_CASSANDRA_KEYSPACE=keyspace,
                   BW_DATA_DIR=str(log_dir / "data"), BW_LOG_JSON="true", BW_LOG_LEVEL="INFO",
                   BW_USER_AGENT=USER_AGENT)
        cluster = Cluster(env, log_dir)
        defaults = HubConfig.from_env(env)
        try:
            rows, results = scenario(cluster, titles)
        finally:
            cluster.procs.stop()
            cluster.http.close()

    print(heading(7, "Recovery: dead spawn and hub restart"))
    print(f"Real processes: hub API and scheduler on PostgreSQL, {SPAWNS} spawns writing to Cassandra, "
          f"{len(titles)} subscriptions on the local wiki, default timing (poll every "
          f"{defaults.poll_interval_s:g} s, a node dead after {defaults.node_failures} failed polls, spawns "
          f"detach after {defaults.detach_after_s:g} s without the hub). Both crashes are SIGKILL. "
          "*Spawns* is the time until the live spawns' own status reports show every subscription running; "
          "*hub* until the hub's API shows them running on live nodes (and, after a restart, has polled "
          "every node).\n")
    print(table(("event", "what", "spawns (s)", "hub (s)", "goal (s)", "verdict"), rows, right=range(2, 5)))
    print()
    for event, seconds in results.items():
        print(f"- {event}: {seconds:.1f} s (goal ≤ {GOALS[event]:.0f} s) — "
              f"{verdict(seconds <= GOALS[event])}")


def scenario(cluster: Cluster, titles: list[str]) -> tuple[list[tuple], dict[str, float]]:
    http, hub = cluster.http, cluster.hub
    cluster.start(SPAWNS)
    tenant = http.post(hub + "/v1/tenants", json={"name": "bench", "quota": None}, headers=cluster.admin,
                       timeout=10).json()
    created = http.post(hub + "/v1/subscriptions/bulk", headers=cluster.admin, timeout=30, json={
        "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "items": [{"title": t} for t in titles]})
    created.raise_for_status()
    ids = {s["id"] for s in cluster.subscriptions()}

    def all_running_on_spawns() -> bool:
        return cluster.running_on_spawns().keys() >= ids

    def hub_shows_running(exclude: str | None = None, polled_since: datetime | None = None) -> bool:
        nodes = cluster.nodes()
        live = {n["id"] for n in nodes if n["state"] == "live" and n["url"] != exclude}
        if polled_since is not None and not all(n["last_seen"] and _instant(n["last_seen"]) >= polled_since
                                                for n in nodes if n["id"] in live):
            return False
        subs = cluster.subscriptions()
        return len(subs) == len(ids) and all(s["state"] == "running" and s["node"] in live for s in subs)

    setup = first_times({"all": lambda: all_running_on_spawns() and hub_shows_running()}, 600)["all"]
    rows = [("start", f"{len(ids)} subscriptions sent and running", f"{setup:.1f}", "", "", "")]

    # -- dead spawn ------------------------------------------------------------------------------
    per_node: dict[str, int] = {}
    for s in cluster.subscriptions():
        per_node[s["node"]] = per_node.get(s["node"], 0) + 1
    victim = max(cluster.nodes(), key=lambda n: per_node.get(n["id"], 0))
    moved = per_node.get(victim["id"], 0)
    cluster.kill_spawn(victim["url"])
    t = first_times({"spawns": all_running_on_spawns,
                     "hub": lambda: hub_shows_running(exclude=victim["url"])}, 120)
    dead_s = max(t.values())
    rows.append(("dead spawn", f"SIGKILL the spawn holding {moved} of {len(ids)}; {len(cluster.spawns)} left",
                 f"{t['spawns']:.1f}", f"{t['hub']:.1f}", f"{GOALS['dead spawn']:.0f}",
                 verdict(dead_s <= GOALS["dead spawn"])))

    # -- hub restart -----------------------------------------------------------------------------
    boots = cluster.boot_ids()
    cluster.kill_hub()
    crashed = datetime.now(timezone.utc)
    cluster.start_hub()
    gaps = []          # moments a spawn sample missed a subscription while the hub was away

    def polled_and_running() -> bool:
        if not all_running_on_spawns():
            gaps.append(time.monotonic())
        return hub_shows_running(polled_since=crashed)

    restart_s = first_times({"hub": polled_and_running}, 120)["hub"]
    restarted = [url for url, boot in cluster.boot_ids().items() if boots[url] != boot]
    rows.append(("hub restart", "SIGKILL API and scheduler, start both again; spawns restarted: "
                 f"{len(restarted)}; samples with a subscription not running: {len(gaps)}",
                 "0.0" if not gaps else "-", f"{restart_s:.1f}", f"{GOALS['hub restart']:.0f}",
                 verdict(restart_s <= GOALS["hub restart"])))
    return rows, {"dead spawn": dead_s, "hub restart": restart_s}


if __name__ == "__main__":
    main()
