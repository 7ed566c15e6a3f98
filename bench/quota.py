"""Tenant quotas (docs/quotas.md) on real processes: hub API and scheduler on PostgreSQL, three spawns
writing to a fresh Cassandra keyspace per run, the local wiki. A tenant with quota 1,000 subscribes to
6 articles holding 7,750 revisions. Each run samples, every 0.25 s, the hub's `used` and `leased` and
the revisions the store holds for those pages. It reports the largest overshoot over the quota ever
seen by any of the three. Some runs SIGKILL a spawn in the middle of the harvest.

Network calls spent on quotas: leases ride on the polls the hub sends anyway, so the hub makes no call
of its own for them. The table counts every hub -> spawn call (polls, puts, drops, from the scheduler's
metrics) and the spawns' MediaWiki requests per 1,000 revisions. A baseline run gives the same 6
subscriptions fixed per-subscription quotas with the same total and no tenant quota, so it leases
nothing. The difference between the two is what the tenant quota costs.

    .venv/bin/python -m bench.quota [--runs 3] [--kills 2]
"""
import argparse
import os
import secrets
import time
from pathlib import Path

from bench.common import CASSANDRA_HOSTS, LOCAL_WIKI, ROOT, USER_AGENT, cassandra_keyspace, heading, pg_database, \
    table, verdict
from bench.recovery import Cluster
from shared.hashing import wiki_key
from shared.revisions.cassandra_store import CassandraRevisionStore
from tools.demo import free_port

QUOTA = 1000
TITLES = ("Synthetic article 1", "Orb-weaver spider", "Spider silk", "Ünïcödé – 東京", "Tarantula", "Web crawler")
SPAWNS = 3
SAMPLE_S = 0.25
QUIET_S = 6.0          # nothing moved for this long: the run is over


def metric(http, url: str, name: str, **labels) -> float:
    text = http.get(url, timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            head, value = line.rsplit(" ", 1)
            if all(f'{k}="{v}"' in head for k, v in labels.items()):
                total += float(value)
    return total


def one_run(kind: str, kill: bool, log_dir: Path) -> dict:
    """kind: "tenant" (tenant quota 1,000, leased) or "baseline" (per-subscription quotas, no tenant quota)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    with pg_database("bw_bench_quota") as db_url, cassandra_keyspace("bw_bench_quota") as (session, keyspace):
        metrics_port = free_port(0)
        env = dict(os.environ, BW_DATABASE_URL=db_url, BW_ADMIN_TOKEN=secrets.token_urlsafe(16),
                   BW_NODE_SECRET=secrets.token_urlsafe(16), BW_WIKI_ALLOWLIST=wiki_key(LOCAL_WIKI),
                   BW_CASSANDRA_HOSTS=",".join(CASSANDRA_HOSTS), BW_CASSANDRA_KEYSPACE=keyspace,
                   BW_DATA_DIR=str(log_dir / "data"), BW_LOG_JSON="true", BW_LOG_LEVEL="INFO",
                   BW_USER_AGENT=USER_AGENT, BW_HOST_DELAY_S="0.4", BW_SCHEDULER_METRICS_PORT=str(metrics_port))
        cluster = Cluster(env, log_dir)
        store = CassandraRevisionStore(session, keyspace)
        try:
            return scenario(cluster, store, kind, kill, f"http://127.0.0.1:{metrics_port}/metrics")
        finally:
            cluster.procs.stop()
            cluster.http.close()


def scenario(cluster: Cluster, store, kind: str, kill: bool, scheduler_metrics: str) -> dict:
    http, hub, admin = cluster.http, cluster.hub, cluster.admin
    cluster.start(SPAWNS)
    tenant = http.post(hub + "/v1/tenants", headers=admin, timeout=10,
                       json={"name": "bench", "quota": QUOTA if kind == "tenant" else None}).json()
    shares = [QUOTA // len(TITLES) + (i < QUOTA % len(TITLES)) for i in range(len(TITLES))]
    items = [{"title": t, **({"quota": q} if kind == "baseline" else {})} for t, q in zip(TITLES, shares)]
    http.post(hub + "/v1/subscriptions/bulk", headers=admin, timeout=30,
              json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "content": True, "items": items}).raise_for_status()
    wiki = wiki_key(LOCAL_WIKI)
    page_ids: dict[str, int] = {}

    def stored() -> int:
        total = 0
        for title in TITLES:
            if title not in page_ids:
                found = store.page_id(wiki, title)
                if found is None:
                    continue
                page_ids[title] = found
            total += sum(1 for _ in store.history(wiki, page_ids[title]))
        return total

    started = time.monotonic()
    worst = {"used": 0, "used+leased": 0, "stored": 0}
    last, since, killed_at, api_before = None, time.monotonic(), None, 0.0
    while True:
        body = http.get(f"{hub}/v1/tenants/{tenant['id']}", headers=admin, timeout=10).json()
        now = {"used": body["used"], "used+leased": body["used"] + body["leased"], "stored": stored()}
        worst = {k: max(worst[k], now[k]) for k in worst}
        if kill and killed_at is None and now["used"] >= 300:
            victim = busiest(cluster, tenant["id"])
            api_before = metric(http, cluster.metrics[victim] + "/metrics", "bw_spawn_api_requests_total")
            cluster.kill_spawn(victim)
            killed_at = now["used"]
        key = (now["used"], now["stored"])
        if key != last:
            last, since = key, time.monotonic()
        if now["used"] >= 0.95 * QUOTA and time.monotonic() - since >= QUIET_S:
            break
        if time.monotonic() - started > 300:
            raise RuntimeError(f"{kind} run did not settle: {now}")
        time.sleep(SAMPLE_S)
    seconds = since - started
    api = sum(metric(http, cluster.metrics[url] + "/metrics", "bw_spawn_api_requests_total")
              for url in cluster.spawns) + api_before
    calls = {"polls": metric(http, scheduler_metrics, "bw_hub_polls_total"),
             "sends": metric(http, scheduler_metrics, "bw_hub_sends_total")}
    return {"kind": kind, "kill": killed_at, "used": last[0], "stored": last[1], "worst": worst,
            "seconds": seconds, "api": api, **calls}


def busiest(cluster: Cluster, tenant_id: str) -> str:
    """URL of the spawn holding the most of the tenant's subscriptions still below their share."""
    http, hub, admin = cluster.http, cluster.hub, cluster.admin
    subs = http.get(f"{hub}/v1/subscriptions", params={"tenant_id": tenant_id, "limit": 100}, headers=admin,
                    timeout=10).json()["items"]
    urls = {n["id"]: n["url"] for n in http.get(f"{hub}/v1/nodes", headers=admin, timeout=10).json()["items"]}
    counts: dict[str, int] = {}
    for sub in subs:
        if sub["node"] in urls and urls[sub["node"]] in cluster.spawns and sub["revisions"] < QUOTA // len(TITLES):
            counts[urls[sub["node"]]] = counts.get(urls[sub["node"]], 0) + 1
    return max(counts, key=counts.get) if counts else next(iter(cluster.spawns))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="tenant-quota runs without a kill")
    parser.add_argument("--kills", type=int, default=2, help="tenant-quota runs with a spawn killed")
    args = parser.parse_args()
    log_root = ROOT / ".run/bench/quota"
    plan = [("baseline", False)] + [("tenant", False)] * args.runs + [("tenant", True)] * args.kills
    results = [one_run(kind, kill, log_root / f"run{i + 1}") for i, (kind, kill) in enumerate(plan)]

    print(heading(8, "Tenant quotas: network calls and overshoot"))
    print(f"Real processes: hub API and scheduler on PostgreSQL, {SPAWNS} spawns writing to a fresh Cassandra "
          f"keyspace per run, the local wiki (wikitext, requests 0.4 s apart). A tenant with quota {QUOTA:,} "
          f"subscribes to {len(TITLES)} articles of 7,750 revisions in all. *Baseline*: the same articles with "
          f"per-subscription quotas summing to {QUOTA:,} and no tenant quota (no lease at all). Overshoot is the "
          "largest excess over the quota of the hub's `used`, of `used + leased`, and of the revisions the "
          f"store holds for those pages, sampled every {SAMPLE_S} s. Calls are per 1,000 revisions delivered.\n")
    rows = []
    for i, r in enumerate(results, 1):
        per_k = 1000 / max(1, r["used"])
        over = max(0, max(r["worst"].values()) - QUOTA)
        rows.append((i, r["kind"], f"at {r['kill']}" if r["kill"] is not None else "-", r["used"], r["stored"],
                     r["worst"]["used+leased"], over, f"{r['seconds']:.1f}", f"{r['polls'] * per_k:.0f}",
                     f"{r['sends'] * per_k:.0f}", f"{r['api'] * per_k:.1f}"))
    print(table(("run", "quota", "spawn killed", "used", "stored", "max used+leased", "overshoot", "seconds",
                 "polls /1k", "puts+drops /1k", "wiki requests /1k"), rows, right=range(3, 11)))
    tenant_runs = [r for r in results if r["kind"] == "tenant"]
    base = results[0]
    worst_over = max(max(0, max(r["worst"].values()) - QUOTA) for r in tenant_runs)
    extra_sends = max(r["sends"] * 1000 / r["used"] for r in tenant_runs if r["kill"] is None) - \
        base["sends"] * 1000 / base["used"]
    print()
    print("- Hub calls made only for quotas: 0 per 1,000 revisions (leases are a field of the poll sent every "
          f"interval anyway; puts+drops per 1,000 revisions with the tenant quota minus the baseline: "
          f"{extra_sends:+.0f}) — {verdict(extra_sends <= 0)}")
    extra_wiki = max(r["api"] * 1000 / r["used"] for r in tenant_runs if r["kill"] is None) - \
        base["api"] * 1000 / base["used"]
    print(f"- MediaWiki requests per 1,000 revisions, tenant quota minus baseline (the cost of harvesting in "
          f"leased slices): {extra_wiki:+.1f} (goal ≤ +1) — {verdict(extra_wiki <= 1)}")
    print(f"- Largest overshoot over {len(tenant_runs)} tenant-quota runs ({args.kills} with a spawn killed): "
          f"{worst_over} revisions (goal 0) — {verdict(worst_over == 0)}")
    print(f"- Reached: {min(r['used'] for r in tenant_runs)} to {max(r['used'] for r in tenant_runs)} of "
          f"{QUOTA:,} delivered (goal ≥ 95 %) — "
          f"{verdict(min(r['used'] for r in tenant_runs) >= 0.95 * QUOTA)}")


if __name__ == "__main__":
    main()
