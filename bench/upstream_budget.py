"""10. Upstream budget: one wiki identity shared by several spawns, behind the local edge.

Runs, each as an identity of its own at the edge (a User-Agent per run, so its buckets and log lines are its own):

  budget       a real hub (API + scheduler) and three real spawns harvest the seeded wiki's articles through the
               edge (scripts/services/nginx.sh, anonymous profile: 1 in flight, 5 r/s, 200/min), two tenants 1:2
  baseline     three real spawns fed specs without `identity` straight through their node API (this script
               registers and polls them, as a minimal hub): each paces the wiki on its own (spawn/host_limiter.py)
  simulated    the real hub and 100 simulated spawns (bench.budget_farm: spawn.upstream_budget's own slots) behind
               a private edge with scaled-up limits, three tenants 1:2:3
  freshness    a caught-up page on the writable wiki edited during a 20,000-revision backfill, hub budget against
               per-process pacing

Measured from the edge's access log: 429s, budget use (answered requests/s over the edge's binding rate, or
in-flight busy time over slots, whichever is higher, while demand lasts) and tenant shares; edit -> stored.

    .venv/bin/python -m bench.upstream_budget
"""
import argparse
import statistics
import json
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Sequence

import requests

from bench import edge_use, long_history
from bench.budget_farm import Farm, send_json
from bench.common import cassandra_keyspace, heading, pg_database, seeded_articles, table, verdict
from blackwidow.router import node_for
from shared.config import DEFAULT_MAX_CLOCK_SKEW_S
from shared.hashing import node_id_for, source_uuid
from shared.wire import SubscriptionSpec
from tests.e2e.cluster import DETACH_AFTER_S, Cluster
from tests.fixtures.edge import (EDGE_DIR, SEEDED_PORT, WRITABLE_PORT, Edge, Limits, LoggedRequest, fetch_limits,
                                 private_edge)
from tests.fixtures.writable_wiki import AdminApi
from tests.support.processes import SpawnProcess, wait_for

EDGE_HOST = f"127.0.0.1:{SEEDED_PORT}"
DIRECT_API = "http://127.0.0.1:8780/api.php"
SPAWNS = 3
WEIGHTS = {"light": 1.0, "heavy": 2.0}
POLL_S = 0.5
HARVEST_TIMEOUT_S = 900.0
GOALS = {"throttled": 0, "use": 0.90, "share": 0.90}
# the 100 simulated spawns: a private edge with the authenticated profile's shape (3 in flight, 10 r/s,
# 600/min), so that a slot is worth holding for many nodes at once
SIM_NODES = 100
SIM_SOURCES = 300
SIM_LIMITS = {"in_flight": 3, "per_s": 10, "per_min": 600}
SIM_WEIGHTS = {"one": 1.0, "two": 2.0, "three": 3.0}
SIM_MEASURE_S = 120.0
SIM_NAME = f"hub budget, {SIM_NODES} simulated spawns (private edge, {SIM_LIMITS['in_flight']} in flight, " \
    f"{SIM_LIMITS['per_s']} r/s, {SIM_LIMITS['per_min']}/min)"
EDGE_WRITABLE = f"127.0.0.1:{WRITABLE_PORT}"
BACKFILL_TITLE = "Bench upstream budget backfill"
BACKFILL_REVISIONS = 20_000
BACKFILL_UNDER_WAY = 1_000       # revisions stored before the first edit
FRESH_EDITS = 3
REVISIT_S = 10.0                 # both runs revisit a caught-up page every 10 s (BW_REVISIT_MIN_S = MAX_S)
REVISIT_ENV = {"BW_REVISIT_MIN_S": str(REVISIT_S), "BW_REVISIT_MAX_S": str(REVISIT_S)}
SKEW_S = DEFAULT_MAX_CLOCK_SKEW_S     # on the hub and the simulated spawns alike


def user_agent(kind: str) -> str:
    return f"BlackWidowBench/{uuid.uuid4().hex[:8]} (upstream budget, {kind}; ops@example.org)"


def the_edge() -> Edge:
    anonymous, authenticated, retry_after_s = fetch_limits(SEEDED_PORT)
    return Edge(EDGE_DIR, SEEDED_PORT, WRITABLE_PORT, anonymous, authenticated, retry_after_s)


def page_ids(titles: Sequence[str]) -> dict[str, str]:
    """{page id: title}, asked of the wiki directly (not through the edge: no log line, no bucket)."""
    out: dict[str, str] = {}
    for i in range(0, len(titles), 50):
        body = requests.get(DIRECT_API, params={"action": "query", "format": "json", "formatversion": "2",
                                                "titles": "|".join(titles[i:i + 50])}, timeout=30).json()
        out.update({str(p["pageid"]): p["title"] for p in body["query"]["pages"] if "pageid" in p})
    return out


def tenants_by_title(want: dict[str, int]) -> dict[str, str]:
    """Pages to tenants, largest first to the tenant with the fewest revisions per weight, so that each tenant's
    demand lasts about as long as its weighted share takes to serve it."""
    got = {name: 0 for name in WEIGHTS}
    out = {}
    for title, n in sorted(want.items(), key=lambda kv: -kv[1]):
        name = min(WEIGHTS, key=lambda x: (got[x] / WEIGHTS[x], -WEIGHTS[x]))
        out[title] = name
        got[name] += n
    return out


# -- the budget run: the real hub ------------------------------------------------------------------
def budget_run(edge: Edge, run_dir: Path, want: dict[str, int]) -> list[LoggedRequest]:
    ua = user_agent("hub budget")
    with pg_database("bench_budget") as db_url, cassandra_keyspace("bench_budget") as (_, keyspace):
        cluster = Cluster(run_dir / "budget", database_url=db_url, keyspace=keyspace, user_agent=ua,
                          allowlist=EDGE_HOST, spawn_env={"BW_USER_AGENT": ua})
        try:
            cluster.start(SPAWNS)
            offset = edge.log_offset()
            by_title = tenants_by_title(want)
            for name, weight in WEIGHTS.items():
                tenant = cluster.tenant(name)
                cluster.hub.patch(f"/v1/tenants/{tenant['id']}", {"weight": weight})
                cluster.subscribe(tenant["id"], edge.seeded_api_url,
                                  [{"title": t} for t, n in by_title.items() if n == name], content=True)
            wait_for(lambda: all(s["revisions"] == want.get(s["title"]) for s in cluster.hub.subscriptions()),
                     HARVEST_TIMEOUT_S, 1.0, "the budget run's harvest")
            return edge.read_log(offset, user_agent=ua)
        finally:
            cluster.stop()


# -- the baseline run: real spawns, this script as their hub ---------------------------------------
class MinimalHub:
    """Answers registrations (POST /v1/nodes) as the hub does; everything else is 404. The spawns' specs and
    polls are sent from the script itself."""

    def __init__(self, secret: str):
        secret_header = f"Bearer {secret}"

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:            # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/nodes" or self.headers.get("Authorization") != secret_header:
                    self.send_error(404 if self.path != "/v1/nodes" else 401)
                    return
                url = json.loads(body)["url"]
                ack = {"id": node_id_for(url), "poll_interval_s": POLL_S, "detach_after_s": 4.0,
                       "orphan_after_s": 6.0}
                send_json(self, 201, ack)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def poll_forever(spawns: Sequence[SpawnProcess], assigned: dict[str, list[str]], done: threading.Event,
                 counts: dict[str, int]) -> None:
    """POST /v1/status to every spawn each POLL_S, naming what it runs (no budgets: per-process pacing)."""
    while not done.is_set():
        for proc in spawns:
            node_id = node_id_for(proc.url)
            try:
                report = proc.http.post(f"{proc.url}/v1/status",
                                        json={"node_id": node_id, "assigned": assigned[proc.url]}, timeout=5).json()
            except (requests.RequestException, ValueError):
                continue
            for sub in report.get("subscriptions", []):
                counts[sub["id"]] = sub.get("revisions", 0)
        done.wait(POLL_S)


class MinimalCluster:
    """Three real spawns registered at a MinimalHub and polled by this script, which places each spec on
    the node the hub's router would pick and reads the revisions each subscription has stored."""

    def __init__(self, run_dir: Path, user_agent: str, allowlist: str, keyspace: str, env: dict[str, str]):
        secret = "bench-" + uuid.uuid4().hex
        self.hub = MinimalHub(secret)
        run_dir.mkdir(parents=True, exist_ok=True)
        self.done = threading.Event()
        self.spawns: list[SpawnProcess] = []
        self.assigned: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}
        env = {"BW_NODE_SECRET": secret, "BW_LOG_JSON": "true", "BW_LOG_LEVEL": "INFO", "BW_WIKI_ALLOWLIST": allowlist,
               "BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": keyspace, "BW_USER_AGENT": user_agent,
               "BW_DATA_DIR": str(run_dir / "data"), **env}
        for i in range(SPAWNS):
            self.spawns.append(SpawnProcess(self.hub.url, env, run_dir / f"spawn{i + 1}.log"))
        for proc in self.spawns:
            proc.wait_ready()
            self.assigned[proc.url] = []
        threading.Thread(target=poll_forever, args=(self.spawns, self.assigned, self.done, self.counts),
                         daemon=True).start()

    def put(self, spec: SubscriptionSpec) -> None:
        by_node = {node_id_for(p.url): p for p in self.spawns}
        proc = by_node[node_for(spec.source_uuid, sorted(by_node))]
        self.assigned[proc.url].append(spec.id)
        proc.put(spec)

    def stop(self) -> None:
        self.done.set()
        for proc in self.spawns:
            proc.stop()
        self.hub.close()


def legacy_spec(wiki: str, title: str, tenant: str) -> SubscriptionSpec:
    """A spec as the hub sent them before identities: no `identity`, so the spawn paces per process."""
    return SubscriptionSpec(id=str(uuid.uuid4()), source_uuid=str(source_uuid(wiki, title)), tenant_id=tenant,
                            wiki=wiki, title=title, content=True)


def baseline_run(edge: Edge, run_dir: Path, want: dict[str, int]) -> list[LoggedRequest]:
    ua = user_agent("per-process pacing")
    with cassandra_keyspace("bench_baseline") as (_, keyspace):
        cluster = MinimalCluster(run_dir / "baseline", ua, EDGE_HOST, keyspace, {})
        try:
            offset = edge.log_offset()
            expected: dict[str, int] = {}
            for title, tenant in tenants_by_title(want).items():
                spec = legacy_spec(edge.seeded_api_url, title, tenant)
                expected[spec.id] = want[title]
                cluster.put(spec)
            wait_for(lambda: all(cluster.counts.get(k) == n for k, n in expected.items()), HARVEST_TIMEOUT_S, 1.0,
                     "the baseline run's harvest")
            return edge.read_log(offset, user_agent=ua)
        finally:
            cluster.stop()


# -- freshness: a caught-up page edited during a long backfill, same identity ------------------------
@dataclass(frozen=True)
class Freshness:
    delays: list[float]              # edit -> the new revision stored, seconds
    backfill_done: list[int]         # revisions of the backfill stored when each edit was stored
    throttled: int


def measure_freshness(admin: AdminApi, title: str, stored: Callable[[str], int], *, fresh: str, backfill: str,
                      edge: Edge, offset: int, ua: str) -> Freshness:
    """Waits for the fresh page to be caught up and the backfill to be under way, then edits the fresh page
    FRESH_EDITS times, each once the previous edit is stored, timing edit -> stored."""
    wait_for(lambda: stored(fresh) >= 1 and stored(backfill) >= BACKFILL_UNDER_WAY, HARVEST_TIMEOUT_S, 0.2,
             "the fresh page caught up and the backfill under way")
    delays, progress = [], []
    for n in range(FRESH_EDITS):
        have = stored(fresh)
        admin.edit(title, f"Edit {n} during the backfill, {uuid.uuid4().hex}", summary="freshness probe")
        edited = time.monotonic()
        wait_for(lambda: stored(fresh) > have, 300, 0.1, "the edit stored")
        delays.append(time.monotonic() - edited)
        progress.append(stored(backfill))
    throttled = sum(1 for r in edge.read_log(offset, user_agent=ua) if r.status == 429)
    return Freshness(delays, progress, throttled)


def freshness_budget(edge: Edge, run_dir: Path, admin: AdminApi, title: str) -> Freshness:
    ua = user_agent("freshness, hub budget")
    with pg_database("bench_fresh") as db_url, cassandra_keyspace("bench_fresh") as (_, keyspace):
        cluster = Cluster(run_dir / "fresh-budget", database_url=db_url, keyspace=keyspace, user_agent=ua,
                          allowlist=EDGE_WRITABLE, spawn_env={"BW_USER_AGENT": ua, **REVISIT_ENV})
        try:
            cluster.start(SPAWNS)
            offset = edge.log_offset()
            tenant = cluster.tenant("readers")
            cluster.subscribe(tenant["id"], edge.writable_api_url, [{"title": title}, {"title": BACKFILL_TITLE}],
                              content=True)
            ids = {s["title"]: s["id"] for s in cluster.hub.subscriptions()}

            def stored(sub_id: str) -> int:
                return next(s["revisions"] for s in cluster.hub.subscriptions() if s["id"] == sub_id)
            return measure_freshness(admin, title, stored, fresh=ids[title], backfill=ids[BACKFILL_TITLE],
                                     edge=edge, offset=offset, ua=ua)
        finally:
            cluster.stop()


def freshness_baseline(edge: Edge, run_dir: Path, admin: AdminApi, title: str) -> Freshness:
    ua = user_agent("freshness, per-process pacing")
    with cassandra_keyspace("bench_fresh_base") as (_, keyspace):
        cluster = MinimalCluster(run_dir / "fresh-baseline", ua, EDGE_WRITABLE, keyspace, REVISIT_ENV)
        try:
            offset = edge.log_offset()
            fresh, backfill = (legacy_spec(edge.writable_api_url, t, "readers") for t in (title, BACKFILL_TITLE))
            cluster.put(fresh)
            cluster.put(backfill)
            return measure_freshness(admin, title, lambda sub_id: cluster.counts.get(sub_id, 0), fresh=fresh.id,
                                     backfill=backfill.id, edge=edge, offset=offset, ua=ua)
        finally:
            cluster.stop()


# -- the simulated run: the real hub, 100 simulated spawns ------------------------------------------
@dataclass(frozen=True)
class SimResult:
    logged: list[LoggedRequest]
    limits: Limits
    span: tuple[float, float]
    answered: dict[str, int]         # answered requests per tenant, as the sources counted them
    detaches: int


def simulated_run(run_dir: Path, titles: Sequence[str]) -> SimResult:
    ua = user_agent("simulated spawns")
    edge_env = {f"BW_EDGE_ANON_{k.upper()}": str(v) for k, v in SIM_LIMITS.items()}

    def query(n: int) -> dict:
        return {"action": "query", "format": "json", "formatversion": "2", "prop": "revisions",
                "rvprop": "ids|timestamp", "rvlimit": "50", "titles": titles[n % len(titles)]}

    with private_edge(edge_env) as edge, pg_database("bench_budget_sim") as db_url:
        host = f"127.0.0.1:{edge.seeded_port}"
        cluster = Cluster(run_dir / "simulated", database_url=db_url, keyspace="unused", user_agent=ua,
                          # one budget cycle spans the measured run, so the shares below are over a cycle,
                          # the span over which the hub balances them (docs/upstream.md)
                          allowlist=host, hub_env={"BW_MAX_CLOCK_SKEW_S": str(SKEW_S),
                                                   "BW_BUDGET_CYCLE_S": str(SIM_MEASURE_S)})
        farm: Farm | None = None
        try:
            cluster.start(0)
            cluster.hub.put(f"/v1/identities/{host}", SIM_LIMITS)
            farm = Farm(SIM_NODES, cluster.hub.url, cluster.node_secret, ua, query, skew_s=SKEW_S,
                        detach_after_s=DETACH_AFTER_S)
            wait_for(lambda: len(cluster.hub.live_nodes()) == SIM_NODES, 120, 0.5, f"{SIM_NODES} live nodes")
            offset = edge.log_offset()
            tenants = {name: cluster.tenant(name) for name in SIM_WEIGHTS}
            for name, weight in SIM_WEIGHTS.items():
                cluster.hub.patch(f"/v1/tenants/{tenants[name]['id']}", {"weight": weight})
            per_tenant = SIM_SOURCES // len(SIM_WEIGHTS)
            for k, name in enumerate(SIM_WEIGHTS):
                cluster.subscribe(tenants[name]["id"], edge.seeded_api_url,
                                  [{"title": f"Simulated backfill {k}-{i}"} for i in range(per_tenant)])
            first = edge.read_log(offset, user_agent=ua, at_least=1, timeout_s=120)
            begin = min(edge_use.start(r) for r in first)
            time.sleep(max(0.0, begin + SIM_MEASURE_S - time.time()))
            end = time.time()
            names = {t["id"]: name for name, t in tenants.items()}
            answered: dict[str, int] = {}
            for source in farm.sources():
                name = names.get(source.spec["tenant_id"], "?")
                answered[name] = answered.get(name, 0) + source.answered
            detaches = sum(s.detaches for s in farm.spawns)
            logged = edge.read_log(offset, user_agent=ua)
            return SimResult(logged, edge.anonymous, (begin, end), answered, detaches)
        finally:
            if farm is not None:
                farm.close()
            cluster.stop()


# -- the report -------------------------------------------------------------------------------------
def both_demanding(logged: Sequence[LoggedRequest], tenant_of: Callable[[str], str | None]) -> list[LoggedRequest]:
    """The requests up to the moment the first tenant ran out of work (its last request's end)."""
    last: dict[str, float] = {}
    for r in logged:
        page = edge_use.page_of(r.uri)
        tenant = tenant_of(page) if page is not None else None
        if tenant is not None:
            last[tenant] = max(last.get(tenant, 0.0), r.msec)
    if len(last) < len(WEIGHTS):
        return []
    until = min(last.values())
    return [r for r in logged if r.msec <= until]


NOTES = """What this does not show:
- Tenant shares: the hub balances shares over BW_BUDGET_CYCLE_S (900 s by default) and hands slots out in
  holds of 15 s. The simulated run sets the cycle to its own length (120 s), so its shares are over one cycle;
  the 3-real-spawn run keeps the default, and its shares cover only the span in which both tenants had work
  (a few holds): a holder's queue serves the tenant furthest behind cluster-wide, but only among the
  tenants whose pages it holds.
- The simulated spawns store nothing (each source is an endless loop of real API requests through the edge);
  their edge runs 3 in flight, 10 r/s, 600/min (the authenticated profile's shape) rather than the anonymous
  numbers, so that many nodes have a slot to hold at once.
- The 3-real-spawn harvest is finite: its span includes the tail where few pages are left to fetch.
- Freshness is three edits per run, against a revisit timer fixed at 10 s in both runs."""


def print_freshness(freshness: dict[str, Freshness], backfill_revisions: int) -> None:
    print()
    print(table(["freshness (3 real spawns, writable wiki's edge)", "edit → stored, each edit s", "median s", "max s",
                 "backfill revisions stored by then", "429s"],
                [[name, ", ".join(f"{d:.1f}" for d in f.delays), f"{statistics.median(f.delays):.1f}",
                  f"{max(f.delays):.1f}", ", ".join(f"{n:,}" for n in f.backfill_done), f.throttled]
                 for name, f in freshness.items()], right=(2, 3, 5)))
    print()
    print(f"A page that is caught up, edited {FRESH_EDITS} times while one identity backfills a "
          f"{backfill_revisions:,}-revision history (with content) through the writable wiki's edge (same anonymous "
          f"limits); the first edit once {BACKFILL_UNDER_WAY:,} of its revisions are stored. Both runs revisit a "
          f"caught-up page every {REVISIT_S:.0f} s (BW_REVISIT_MIN_S = BW_REVISIT_MAX_S, so that the delay's other "
          "part, waiting for a request slot, is what differs; the spawn's default revisit is 60 s to 1 day). "
          "No goal was set for this delay.")


def print_shares(run: str, counts: dict[str, int], weights: dict[str, float], what: str) -> None:
    got = edge_use.shares(counts, weights)
    print()
    print(table([f"tenant ({run})", "weight", "answered requests", "share", "weighted share", "share ÷ weighted share"],
                [[t, weights[t], counts.get(t, 0), f"{s:.0%}", f"{w:.0%}", f"{s / w:.2f}"]
                 for t, (s, w) in got.items()],
                right=(1, 2, 3, 4, 5)))
    worst = min(s / w for s, w in got.values())
    print()
    print(f"- tenant shares with the hub's budget, {what}: worst tenant {worst:.2f} × its weighted share "
          f"(goal ≥ {GOALS['share']}) {verdict(worst >= GOALS['share'])}")


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    edge = the_edge()
    limits = edge.anonymous
    articles = seeded_articles()
    want = {p.title: len(p.revisions) for p in articles}
    by_title = tenants_by_title(want)
    ids = page_ids(list(want))

    def tenant_of(page: str) -> str | None:
        return by_title.get(ids.get(page, page))

    with tempfile.TemporaryDirectory(prefix="bench-budget-") as tmp:
        runs = {"hub budget, 3 real spawns": budget_run(edge, Path(tmp), want),
                "per-process pacing (baseline), 3 real spawns": baseline_run(edge, Path(tmp), want)}
        sim = simulated_run(Path(tmp), list(want))
        admin, backfill_revisions = long_history.ensure(BACKFILL_TITLE, BACKFILL_REVISIONS)
        freshness = {}
        for name, run in (("hub budget, freshness lane", freshness_budget),
                          ("per-process pacing (baseline)", freshness_baseline)):
            title = f"Bench freshness probe {uuid.uuid4().hex[:8]}"
            admin.edit(title, "A page that is caught up before the backfill starts.", summary="created")
            freshness[name] = run(the_edge(), Path(tmp), admin, title)
    uses = {name: edge_use.use(logged, in_flight=limits.in_flight, per_s=limits.per_s, per_min=limits.per_min)
            for name, logged in runs.items()}
    uses[SIM_NAME] = edge_use.use(sim.logged, in_flight=sim.limits.in_flight, per_s=sim.limits.per_s,
                                  per_min=sim.limits.per_min, span=sim.span)

    print(heading(10, "Upstream budget: one wiki identity, shared by several spawns, behind the edge"))
    print(f"The seeded wiki's {len(want)} articles ({sum(want.values()):,} revisions) harvested through the local "
          f"edge as one anonymous identity (edge limits {limits.in_flight} in flight, {limits.per_s} r/s, "
          f"{limits.per_min}/min, the shape of Wikimedia's anonymous profile; binding rate "
          f"{min(limits.per_s, limits.per_min / 60):.2f} r/s). Use = answered requests/s ÷ binding rate, or busy "
          "in-flight time ÷ slots, whichever is higher, from the first request's start to the last one's end.\n")
    rows = [[name, u.requests, u.throttled, f"{u.span_s:.0f}", f"{u.rate_per_s:.2f}", f"{u.busy:.0%}",
             f"{u.rate_use:.0%}", f"{u.use:.0%}", u.peak_in_flight] for name, u in uses.items()]
    logs = {**runs, SIM_NAME: sim.logged}
    rows = [[*row[:3], ", ".join(f"{k} {v}" for k, v in edge_use.refusals(logs[str(row[0])]).items()) or "–", *row[3:]]
            for row in rows]
    print(table(["run", "requests", "429s", "refused by", "span s", "answered r/s", "slot busy", "rate use", "use",
                 "peak in flight"], rows, right=(1, 2, 4, 5, 6, 7, 8, 9)))
    budget = uses["hub budget, 3 real spawns"]
    print()
    print(f"- 429s with the hub's budget, 3 real spawns: {budget.throttled} (goal {GOALS['throttled']}) "
          f"{verdict(budget.throttled <= GOALS['throttled'])}")
    print(f"- budget use with the hub's budget, 3 real spawns: {budget.use:.0%} (goal ≥ {GOALS['use']:.0%}) "
          f"{verdict(budget.use >= GOALS['use'])}")

    simulated = uses[SIM_NAME]
    print(f"- 429s with the hub's budget, {SIM_NODES} simulated spawns: {simulated.throttled} "
          f"(goal {GOALS['throttled']}) {verdict(simulated.throttled <= GOALS['throttled'])}")
    print(f"- budget use with the hub's budget, {SIM_NODES} simulated spawns: {simulated.use:.0%} "
          f"(goal ≥ {GOALS['use']:.0%}) {verdict(simulated.use >= GOALS['use'])}")

    both = both_demanding(runs["hub budget, 3 real spawns"], tenant_of)
    if both:
        print_shares("budget run, 3 real spawns", edge_use.tenant_counts(both, tenant_of), WEIGHTS,
                     f"3 real spawns (weights 1:2), over {both[-1].msec - both[0].msec:.0f} s while both had demand")
    print_shares(f"{SIM_NODES} simulated spawns", sim.answered, SIM_WEIGHTS,
                 f"{SIM_NODES} simulated spawns (weights 1:2:3, {SIM_SOURCES} backfill sources, {SIM_MEASURE_S:.0f} s)")
    print_freshness(freshness, backfill_revisions)
    print(f"\nThe simulated spawns detached {sim.detaches} time(s) during the run.")
    print("\n" + NOTES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
