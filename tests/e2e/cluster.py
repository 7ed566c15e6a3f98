"""The whole system for end-to-end tests: the hub (API and scheduler) and spawns as separate real processes
on PostgreSQL, Cassandra (a keyspace of the test's own) and the local MediaWiki, with short BW_* timings.

Secrets are random per cluster, so a leak is found by searching for their exact value in every log."""
import secrets
from pathlib import Path

from shared.hashing import node_id_for
from tests.support.hub import HubProcesses
from tests.support.processes import SpawnProcess, free_port, wait_for

INTERVAL_S = 0.5
NODE_FAILURES = 3
DETACH_AFTER_S = 4.0
ORPHAN_AFTER_S = 6.0
LOCAL_WIKI = "127.0.0.1:8780"            # the allowlist entry of the local MediaWiki


class Spawn:
    """One spawn node: a fixed port, so a restart keeps its URL and node id, and its current process."""

    def __init__(self, cluster: "Cluster", index: int, *, port: int | None = None,
                 advertise_url: str | None = None, hub_url: str | None = None, env: dict | None = None):
        self.cluster = cluster
        self.env = env or {}                        # this node's own, over the cluster's spawn_env
        self.index = index
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.advertise_url = advertise_url          # another URL the hub reaches it at (a recording proxy)
        self.hub_url = hub_url or cluster.hub.url
        self.node_id = node_id_for(advertise_url or self.url)
        self.proc: SpawnProcess | None = None
        self.procs: list[SpawnProcess] = []       # every process this node ran, oldest first

    def start(self) -> "Spawn":
        self.proc = SpawnProcess(self.hub_url, {**self.cluster.spawn_env, **self.env},
                                 self.cluster.run_dir / f"spawn{self.index}-{len(self.procs) + 1}.log",
                                 port=self.port, advertise_url=self.advertise_url)
        self.procs.append(self.proc)
        self.proc.wait_ready()
        return self

    def kill9(self) -> None:
        self.proc.kill9()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def health(self) -> dict:
        """GET /health: no secret, and unlike /v1/status not a heartbeat (it cannot delay a detach)."""
        return self.proc.health()

    def events(self) -> list[str]:
        return [e for proc in self.procs for e in proc.events()]


class Cluster:
    def __init__(self, run_dir: Path, *, database_url: str, keyspace: str, user_agent: str,
                 allowlist: str = LOCAL_WIKI, hub_env: dict | None = None, spawn_env: dict | None = None):
        self.run_dir = run_dir
        self.keyspace = keyspace
        self.admin_token = "e2e-admin-" + secrets.token_urlsafe(18)
        self.node_secret = "e2e-node-" + secrets.token_urlsafe(18)
        common = {"BW_NODE_SECRET": self.node_secret, "BW_LOG_JSON": "true", "BW_LOG_LEVEL": "INFO",
                  "BW_POLL_INTERVAL_S": str(INTERVAL_S), "BW_NODE_FAILURES": str(NODE_FAILURES),
                  "BW_DETACH_AFTER_S": str(DETACH_AFTER_S), "BW_ORPHAN_AFTER_S": str(ORPHAN_AFTER_S)}
        self.metrics_port = free_port()
        (run_dir / "hub").mkdir(parents=True, exist_ok=True)
        self.hub = HubProcesses({**common, "BW_DATABASE_URL": database_url, "BW_WIKI_ALLOWLIST": allowlist,
                                 "BW_WORKERS": "2", "BW_SCHEDULER_METRICS_PORT": str(self.metrics_port),
                                 **(hub_env or {})}, run_dir / "hub", admin_token=self.admin_token)
        self.spawn_env = {**common, "BW_WIKI_ALLOWLIST": allowlist,
                          "BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": keyspace,
                          "BW_USER_AGENT": user_agent, "BW_DATA_DIR": str(run_dir / "spawn-data"),
                          "BW_HOST_DELAY_S": "0.05", **(spawn_env or {})}
        self.spawns: list[Spawn] = []

    def start(self, spawns: int = 3) -> "Cluster":
        self.hub.start("1")
        self.hub.wait_leader()
        # what the ALB checks: 200 once the leader finished a tick (503 before, as without a scheduler)
        wait_for(self.hub.healthy, 60, 0.2, "the hub's /health to say 200")
        for _ in range(spawns):
            self.add_spawn()
        wait_for(lambda: len(self.hub.live_nodes()) == spawns, 60, 0.2, f"{spawns} live nodes")
        return self

    def add_spawn(self, **options) -> Spawn:
        """A started spawn; options as for Spawn (port, advertise_url, hub_url, env)."""
        spawn = Spawn(self, len(self.spawns) + 1, **options)
        self.spawns.append(spawn)
        return spawn.start()

    def spawn_by_node(self, node_id: str) -> Spawn:
        return next(s for s in self.spawns if s.node_id == node_id)

    def stop(self) -> None:
        for spawn in self.spawns:
            spawn.stop()
        self.hub.stop()

    # -- the tenant's side ----------------------------------------------------------------------
    def tenant(self, name: str, quota: int | None = None) -> dict:
        return self.hub.post("/v1/tenants", {"name": name, "quota": quota})

    def subscribe(self, tenant_id: str, wiki: str, items: list[dict], **defaults) -> list[dict]:
        """Bulk-subscribe; `items` are {"title": …} with optional per-item quota/content."""
        return self.hub.post("/v1/subscriptions/bulk", {"tenant_id": tenant_id, "wiki": wiki, "items": items,
                                                        **defaults})["items"]

    # -- what the processes wrote ------------------------------------------------------------------
    def logs(self) -> list[Path]:
        return sorted(self.run_dir.rglob("*.log"))

    def leaks(self, texts: dict[str, str] | None = None) -> list[str]:
        """Where either secret appears: in any process log, or in the given {label: text}."""
        sources = {str(p.relative_to(self.run_dir)): p.read_text(errors="replace") for p in self.logs()}
        sources.update(texts or {})
        return [f"{label} holds the {name}" for label, text in sources.items()
                for name, value in (("admin token", self.admin_token), ("node secret", self.node_secret))
                if value in text]
