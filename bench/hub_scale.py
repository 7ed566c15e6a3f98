"""5. Hub scale: the real poll tick (blackwidow.poller.poll_once) on PostgreSQL against 1,000
simulated spawns (bench.spawn_farm: real HTTP endpoints, one port each, in a separate process)
holding 100,000 and 1,000,000 subscriptions, under modulo and rendezvous routing.

Measured, in a hub process of its own (so its memory is the tick's alone):
  initial placement  every subscription sent once (no goal; the cost of a cold start)
  full poll cycle    a steady tick: poll every node, route, plan, nothing to send
  soft reload        1,000 subscriptions changed (their quota, as the admin API does) then one tick
  hard reload        one node joins, then one tick (modulo moves nearly everything, rendezvous ~1/n)
  paced moves        under modulo, the ticks after it that move the rest band by band (blackwidow.rebalance)
  hub memory         the hub process's peak RSS
  floor              the last full poll cycle's requests sent again, nothing else done
  restart            a new scheduler's first tick (no snapshot, no reports kept) over the placed cluster, and
                     the ticks of its takeover after it, a group of nodes a tick (blackwidow.takeover)
  detached, orphaned the farm's running totals after each tick (goal: none, ever)

    .venv/bin/python -m bench.hub_scale [--nodes 1000] [--runs 100000:modulo,100000:rendezvous,1000000:modulo]
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

from bench.common import SECRET, heading, pg_database, table, verdict
from shared.config import HubConfig

WIKI = "https://en.wikipedia.org/w/api.php"
GOALS = {"cycle": 5.0, "hard": 15.0, "soft": 2.0}
DEFAULT_RUNS = ("100000:modulo", "100000:rendezvous", "1000000:modulo", "1000000:rendezvous")


# -- the hub process ---------------------------------------------------------------------------
def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MB."""
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value, _ = line.split()
                values[key] = int(value) / 1024
    return values["VmRSS:"], values["VmHWM:"]


def hub(db_url: str, routing: str, join_url: str, changes: int, cycles: int, control: str) -> None:
    """Runs in its own process; prints one JSON line per measured tick."""
    import sqlalchemy as sa

    from blackwidow.db import make_sessionmaker
    from blackwidow.models import Subscription
    from blackwidow.poller import PollerState, poll_once
    from blackwidow.scheduler import USER_AGENT, live_nodes
    from blackwidow.spawn_client import SpawnClient
    from blackwidow.store import changes as change_log, register_node
    from shared.http import CLUSTER_HOSTS, make_session

    class TimedClient(SpawnClient):
        """The scheduler's client, noting when a tick's first poll and first send request start and
        its last ones end, and counting send requests."""
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.lock = threading.Lock()
            self.reset()

        def reset(self) -> None:
            self.windows: dict[str, list[float]] = {}
            self.requests = 0
            self.statuses = 0                          # statuses the answers carried (a delta carries few)
            self.recorded: dict[str, list] = {}       # url -> the polls sent to it this tick, in order

        def poll(self, url, poll):
            with self.lock:
                self.recorded.setdefault(url, []).append(poll)
            answer = self._timed("polls", super().poll, url, poll)
            with self.lock:
                self.statuses += len(answer.subscriptions)
            return answer

        def send_batch(self, *args, **kwargs):
            with self.lock:
                self.requests += 1
            return self._timed("sends", super().send_batch, *args, **kwargs)

        def _timed(self, name, call, *args, **kwargs):
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                with self.lock:
                    window = self.windows.get(name)
                    self.windows[name] = [min(window[0], started) if window else started, time.perf_counter()]

        def seconds(self, name: str) -> float:
            window = self.windows.get(name)
            return window[1] - window[0] if window else 0.0

    config = HubConfig.from_env({"BW_NODE_SECRET": SECRET, "BW_ADMIN_TOKEN": "unused",
                                 "BW_DATABASE_URL": db_url, "BW_ROUTING": routing})
    maker = make_sessionmaker(config.database_url)
    sql_s = [0.0]          # time spent in the driver's execute calls (the tick runs its SQL on one thread)

    @sa.event.listens_for(maker.kw["bind"], "before_cursor_execute")
    def sql_started(conn, cursor, statement, parameters, context, executemany) -> None:
        conn.info["bench_sql_started"] = time.perf_counter()

    @sa.event.listens_for(maker.kw["bind"], "after_cursor_execute")
    def sql_ended(conn, cursor, statement, parameters, context, executemany) -> None:
        sql_s[0] += time.perf_counter() - conn.info.pop("bench_sql_started")

    # the scheduler's own session settings (blackwidow.scheduler.serve)
    client = TimedClient(make_session(USER_AGENT, pool_size=32, hosts=CLUSTER_HOSTS), config.node_secret)
    state = PollerState()
    # and its keepalives, as a leading scheduler sends them (the farm's nodes detach like real spawns)
    from blackwidow import keepalive
    rounds = {"last": time.monotonic(), "max_gap": 0.0, "failed": 0}

    def keepalive_round(sent: int, failed: int) -> None:
        # the longest wait between two finished keepalive rounds, and the keepalives that failed, per tick
        now = time.monotonic()
        rounds["max_gap"] = max(rounds["max_gap"], now - rounds["last"])
        rounds["last"] = now
        rounds["failed"] += failed

    keeping, stop_keeping = keepalive.start(config, USER_AGENT, live_nodes(maker), keepalive_round)

    def tick(phase: str) -> None:
        client.reset()
        sql_s[0] = 0.0
        rounds.update(max_gap=0.0, failed=0)
        r = poll_once(maker, client, config, state=state)
        rss, peak = _rss_mb()
        # the farm's running totals right after the tick: a node that detached or orphaned anything during
        # it shows in this tick's row
        with urllib.request.urlopen(f"{control}/stats", timeout=30) as resp:
            farm = json.load(resp)
        print(json.dumps({"phase": phase, "seconds": r.seconds, "poll_s": client.seconds("polls"),
                          "send_s": client.seconds("sends"), "sql_s": sql_s[0], "requests": client.requests,
                          "polled": r.polled, "failed": len(r.failed), "kind": r.kind, "sent": r.sent,
                          "detaches": farm.get("detaches", 0), "orphaned": farm.get("orphaned", 0),
                          "send_failures": r.send_failures, "dropped": r.dropped, "adopted": r.adopted,
                          "rss_mb": rss, "peak_mb": peak, "stages": r.stages,
                          "keepalive_gap_s": rounds["max_gap"], "keepalive_failed": rounds["failed"],
                          "farm_stall_s": farm.get("max_stall_s", 0.0),
                          "reasons": r.reasons, "looked_at": r.looked_at, "statuses": client.statuses,
                          "pending": r.pending}),
              flush=True)

    def floor(recorded_polls: dict[str, list]) -> None:
        """The last tick's polls again, same bodies, same client and concurrency, doing nothing else: the
        time a poll cycle cannot go below on this machine. Each names the node's latest report, as the
        next tick's would (an older token would be answered with everything)."""
        from concurrent.futures import ThreadPoolExecutor
        from dataclasses import replace

        from blackwidow.poller import MAX_WORKERS

        def replay(item) -> None:
            url, polls = item
            known = state.reports.get(polls[0].node_id)
            since = known.token if known is not None else None
            for poll in polls:          # one poll's requests: all name the same report
                SpawnClient.poll(client, url, replace(poll, report=replace(poll.report, since=since)))

        recorded = list(recorded_polls.items())
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=MAX_WORKERS) as pool:
            list(pool.map(replay, recorded))
        print(json.dumps({"floor_s": time.perf_counter() - started,
                          "requests": sum(len(p) for _, p in recorded)}), flush=True)

    tick("initial placement")
    tick("first poll after placement")
    for _ in range(cycles):
        tick("full poll cycle")
    floor(dict(client.recorded))
    state = PollerState()        # a scheduler restarted: no snapshot, no reports, a new epoch
    tick("first tick after a restart")
    taking = 0
    while state.taking_over is not None and taking < 200:
        tick("takeover")
        taking += 1
    with maker.begin() as session:
        ids = session.scalars(sa.select(Subscription.id).order_by(Subscription.id).limit(changes)).all()
        session.execute(sa.update(Subscription).where(Subscription.id.in_(ids)).values(quota=1_000_000))
        change_log.note(session, ids)          # as the admin API does
    tick("soft reload")
    with maker.begin() as session:
        register_node(session, join_url)
    tick("hard reload")
    moving = 0
    while state.paced is not None and state.paced.moving and moving < 500:
        tick("paced move")
        moving += 1
    tick("full poll cycle after")
    for _ in range(2):
        tick("steady after the move")
    floor(dict(client.recorded))     # is a cluster that moved slower to poll, or is the hub?
    stop_keeping.set()           # before the interpreter exits under its executor
    keeping.join()


# -- the benchmark -------------------------------------------------------------------------------
def seed(db_url: str, urls: list[str], subscriptions: int) -> None:
    import sqlalchemy as sa

    from blackwidow import migrate
    from blackwidow.db import make_sessionmaker
    from blackwidow.models import Subscription, Tenant
    from blackwidow.store import register_node
    from shared.hashing import source_uuid

    migrate.upgrade(db_url)
    maker = make_sessionmaker(db_url)
    with maker.begin() as session:
        for url in urls:
            register_node(session, url)
        tenant = Tenant(id=str(uuid.uuid4()), name="bench")
        session.add(tenant)
        session.flush()
        rows = [{"id": str(uuid.uuid4()), "tenant_id": tenant.id, "wiki": WIKI, "title": f"Article {i}",
                 "source_uuid": str(source_uuid(WIKI, f"Article {i}")), "state": "pending"}
                for i in range(subscriptions)]
        for start in range(0, len(rows), 10_000):
            session.execute(sa.insert(Subscription), rows[start:start + 10_000])
    maker.kw["bind"].dispose()


def run(nodes: int, subscriptions: int, routing: str, changes: int, cycles: int) -> list[dict]:
    env = dict(os.environ, BW_NODE_SECRET=SECRET)
    farm = subprocess.Popen([sys.executable, "-m", "bench.spawn_farm", "--nodes", str(nodes + 1)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(farm.stdout.readline())
        urls, join_url = info["urls"][:nodes], info["urls"][nodes]
        with pg_database("bw_bench_scale") as db_url:
            seed(db_url, urls, subscriptions)
            argv = [sys.executable, "-m", "bench.hub_scale", "--hub", db_url, "--routing", routing,
                    "--join", join_url, "--changes", str(changes), "--cycles", str(cycles),
                    "--control", info["control"]]
            hub_proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
            ticks = []
            for line in hub_proc.stdout:
                if line.startswith('{"floor_s"'):
                    ticks[-1]["floor"] = json.loads(line)        # belongs to the tick just before it
                    continue
                if line.startswith("{"):
                    ticks.append(json.loads(line))
                    stages = " ".join(f"{k} {v:.1f}" for k, v in ticks[-1]["stages"].items())
                    print(f"hub_scale: {routing} {ticks[-1]['phase']}: {ticks[-1]['seconds']:.1f} s ({stages}; "
                          f"{ticks[-1]['reasons']}, detached {ticks[-1]['detaches']}, "
                          f"orphaned {ticks[-1]['orphaned']}, keepalive gap {ticks[-1]['keepalive_gap_s']:.1f} s, "
                          f"{ticks[-1]['keepalive_failed']} failed, farm stall {ticks[-1]['farm_stall_s']:.1f} s, "
                          f"{ticks[-1]['statuses']} statuses read, peak {ticks[-1]['peak_mb']:.0f} MB)",
                          file=sys.stderr, flush=True)
            if hub_proc.wait() != 0:
                raise RuntimeError(f"the hub process exited with {hub_proc.returncode}")
        return ticks
    finally:
        farm.stdin.close()
        farm.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", default=",".join(DEFAULT_RUNS),
                        help="comma-separated SUBSCRIPTIONS:ROUTING runs, e.g. 100000:modulo,1000000:modulo")
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--hub", help=argparse.SUPPRESS)      # internal: run as the hub process
    parser.add_argument("--routing", help=argparse.SUPPRESS)
    parser.add_argument("--join", help=argparse.SUPPRESS)
    parser.add_argument("--control", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hub:
        hub(args.hub, args.routing, args.join, args.changes, args.cycles, args.control)
        return

    results: dict[tuple[int, str], list[dict]] = {}
    for item in args.runs.split(","):
        size, routing = item.split(":")
        started = time.monotonic()
        results[int(size), routing] = run(args.nodes, int(size), routing, args.changes, args.cycles)
        print(f"hub_scale: {routing} at {int(size):,} done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    report(args, results)


def goals(size: int) -> dict[str, float]:
    """The hub's targets: at 100,000 subscriptions, and (issue of the million) at 1,000,000."""
    return {**GOALS, "memory_mb": 500.0 if size <= 100_000 else 2000.0}


def report(args, results: dict[tuple[int, str], list[dict]]) -> None:
    from blackwidow.sends import BATCH_SIZE
    sizes = sorted({size for size, _ in results})
    print(heading(5, f"Hub scale: {args.nodes:,} spawns, " + " and ".join(f"{n:,}" for n in sizes)
                  + " subscriptions"))
    print(f"`poll_once` on PostgreSQL, in a hub process of its own with the scheduler's HTTP client "
          f"settings and its keepalive process, against {args.nodes:,} simulated spawns (`bench.spawn_farm`: one "
          f"asyncio process, a real HTTP port per node, answering as spawns do, with the real spawn's 15 s "
          f"detach and 20 s orphan timers). Each row is one tick. *Polls*: wall time from "
          f"the tick's first status poll to the end of its last; *sends*: the same for the requests carrying "
          f"puts and drops (`POST /v1/subscriptions`, each node's drops then puts, up to {BATCH_SIZE} per "
          f"request, nodes concurrently); *requests*: how many of those; *SQL*: time spent in the database "
          f"driver's execute calls; *detached*, *orphaned*: the farm's totals right after the tick; "
          f"*keepalive gap*: the longest wait between two finished rounds of the hub's keepalives during the "
          f"tick (a node detaches after 15 s without hearing the hub); *farm stall*: the longest the farm's "
          f"one event loop ran late during the tick (a farm too busy to read its keepalives would detach nodes "
          f"a real spawn would not). Soft "
          f"reload: {args.changes:,} subscriptions get a new quota (as the admin API does), then one tick. "
          f"Hard reload: one node joins, then one tick. The first poll after the placement also records the "
          f"counters the nodes report for the first time. Hub and spawns share the machine's 2 cores.\n")
    rows = []
    for (size, routing), ticks in results.items():
        for t in _rows(ticks):
            rows.append((f"{size:,}", routing, t["phase"], f"{t['seconds']:.2f}", f"{t['poll_s']:.2f}",
                         f"{t['send_s']:.2f}", f"{t['sql_s']:.2f}", t["requests"], t["polled"],
                         t["kind"] or "-", t["sent"], t["dropped"], t["send_failures"] + t["failed"],
                         f"{t['rss_mb']:.0f}", t["detaches"], t["orphaned"], f"{t['keepalive_gap_s']:.1f}",
                         f"{t['farm_stall_s']:.1f}"))
    print(table(("subscriptions", "routing", "tick", "seconds", "polls (s)", "sends (s)", "SQL (s)", "requests",
                 "nodes polled", "reload", "puts", "drops", "failures", "hub RSS MB", "detached", "orphaned",
                 "keepalive gap (s)", "farm stall (s)"),
                rows, right=range(3, 18)))
    print()
    for (size, routing), ticks in results.items():
        goal = goals(size)
        by: dict[str, list[dict]] = {}
        for t in ticks:
            by.setdefault(t["phase"], []).append(t)
        cycles = sorted(by["full poll cycle"], key=lambda t: t["seconds"])
        cycle = cycles[len(cycles) // 2]["seconds"]
        floor = by["full poll cycle"][-1].get("floor")
        hard, soft, restart = by["hard reload"][0], by["soft reload"][0], by["first tick after a restart"][0]
        # a restart: its first tick and the takeover's ticks after it, each a tick the goal holds for
        taking = [restart, *by.get("takeover", [])]
        slowest = max(taking, key=lambda t: t["seconds"])
        # the join's move: its own tick, the paced ones after it, and the tick that drops the last old copies
        move = [hard, *by.get("paced move", []), *by["full poll cycle after"]]
        longest = max(move, key=lambda t: t["seconds"])
        moved = sum(t["sent"] for t in move)
        peak = max(t["peak_mb"] for t in ticks)
        floor_text = "" if floor is None else (
            f", {cycle / floor['floor_s']:.1f}× its floor of {floor['floor_s']:.2f} s (the same "
            f"{floor['requests']:,} poll requests sent again with the same client and concurrency, nothing "
            f"else; goal ≤ 1.5×) — {verdict(cycle <= 1.5 * floor['floor_s'])}")
        print(f"- {routing}, {size:,} subscriptions: full poll cycle {cycle:.2f} s, median of {len(cycles)} (goal ≤ "
              f"{goal['cycle']:.0f} s) — {verdict(cycle <= goal['cycle'])}{floor_text}; hard reload: one node "
              f"joining moved {moved:,} subscriptions in {len(move)} ticks and "
              f"{sum(t['seconds'] for t in move):.0f} s, the longest tick {longest['seconds']:.2f} s (goal ≤ "
              f"{goal['hard']:.0f} s) — {verdict(longest['seconds'] <= goal['hard'])}; soft reload of "
              f"{args.changes:,} changes: sends {soft['send_s']:.2f} s, whole tick {soft['seconds']:.2f} s "
              f"(goal ≤ {goal['soft']:.0f} s for the reload) — {verdict(soft['send_s'] <= goal['soft'])}; "
              f"a scheduler restart: its first tick {restart['seconds']:.2f} s and the takeover after it "
              f"{len(taking) - 1} ticks, {sum(t['seconds'] for t in taking):.0f} s in all, the longest tick "
              f"{slowest['seconds']:.2f} s (goal ≤ {goal['hard']:.0f} s) — "
              f"{verdict(slowest['seconds'] <= goal['hard'])}; "
              f"hub peak memory {peak:.0f} MB (goal ≤ {goal['memory_mb']:.0f} MB) — "
              f"{verdict(peak <= goal['memory_mb'])}; spawns detached through the whole run: "
              f"{ticks[-1]['detaches']}, subscriptions dropped as orphans: {ticks[-1]['orphaned']} (goal 0) — "
              f"{verdict(not ticks[-1]['detaches'] and not ticks[-1]['orphaned'])}.")
    notes(args, results)


def _rows(ticks: list[dict]) -> list[dict]:
    """The table's rows: one per tick, the paced moves after a join and the takeover after a restart each summed
    into one row."""
    for phase, label in (("paced move", "paced moves"), ("takeover", "takeover")):
        runs = [t for t in ticks if t["phase"] == phase]
        if not runs:
            continue
        total = {key: sum(t[key] for t in runs) for key in ("seconds", "poll_s", "send_s", "sql_s", "requests",
                                                            "sent", "dropped", "send_failures", "failed")}
        summed = {**runs[-1], **total, "phase": f"{label}: {len(runs)} ticks, summed (longest "
                                                f"{max(t['seconds'] for t in runs):.2f} s)",
                  "polled": max(t["polled"] for t in runs),
                  "keepalive_gap_s": max(t["keepalive_gap_s"] for t in runs),
                  "farm_stall_s": max(t["farm_stall_s"] for t in runs), "rss_mb": max(t["rss_mb"] for t in runs)}
        at = ticks.index(runs[0])
        ticks = [*ticks[:at], summed, *(t for t in ticks[at:] if t["phase"] != phase)]
    return ticks


def notes(args, results: dict[tuple[int, str], list[dict]]) -> None:
    """Where the ticks' time goes, from this run's own numbers."""
    for size in sorted({size for size, _ in results}):
        ticks = {(routing, t["phase"]): t for (n, routing), ts in results.items() if n == size for t in ts}
        hard = ticks.get(("modulo", "hard reload"))
        steady = ticks.get(("modulo", "full poll cycle"))
        placement = ticks.get(("modulo", "initial placement"))
        if hard is None or steady is None or placement is None:
            continue
        paced = [t for (n, routing), ts in results.items() if n == size and routing == "modulo"
                 for t in ts if t["phase"] == "paced move"]
        after = ticks[("modulo", "full poll cycle after")]
        move = [hard, *paced, after]
        longest = max(move, key=lambda t: t["seconds"])
        python_s = longest["seconds"] - longest["poll_s"] - longest["send_s"] - longest["sql_s"]
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in steady["stages"].items())
        print(f"\nAt {size:,} subscriptions, a steady modulo tick by stage: {stages}. One node joining re-routes "
              f"nearly every route key under modulo; the hub moves them band by band, as many a tick as fit in "
              f"{HubConfig.move_tick_s:.0f} s by what it measured of its own ticks, at most "
              f"{HubConfig.moves_per_tick:,} (`BW_MOVE_TICK_S`, `BW_MOVES_PER_TICK`, docs/coordination.md "
              f"\"Paced moves\"): the join's own tick "
              f"moved {hard['sent']:,}, the {len(paced)} ticks after it {sum(t['sent'] for t in paced):,} in all, "
              f"each a put on its new node and, a tick later, a drop of its old copy; {sum(t['sent'] for t in move):,} "
              f"moves and {sum(t['dropped'] for t in move):,} drops in {sum(t['seconds'] for t in move):.0f} s. The "
              f"longest of those ticks, {longest['seconds']:.1f} s: polls {longest['poll_s']:.1f} s, sends "
              f"{longest['send_s']:.1f} s in {longest['requests']:,} requests, SQL {longest['sql_s']:.1f} s (a row "
              f"of `assignments` and one of `subscriptions` per move) against {steady['sql_s']:.1f} s in a steady "
              f"tick, and {python_s:.1f} s of routing, planning and bookkeeping in Python.")
        before = ticks[("modulo", "full poll cycle")]
        settled = ticks.get(("modulo", "steady after the move"))
        if settled is not None and "floor" in settled and "floor" in before:
            print(f"\nAfter the move, a steady tick took {settled['seconds']:.1f} s against its floor of "
                  f"{settled['floor']['floor_s']:.1f} s (the same polls replayed, nothing else), where before the "
                  f"join it took {before['seconds']:.1f} s against {before['floor']['floor_s']:.1f} s.")
        rv, rv_hard = ticks.get(("rendezvous", "initial placement")), ticks.get(("rendezvous", "hard reload"))
        if rv is not None and rv_hard is not None:
            looked = rv_hard.get("looked_at")
            looked_text = "every subscription" if looked is None else f"{looked:,} subscriptions"
            print(f"\nRendezvous weighs every source and node once per scheduler start ({size * args.nodes:,} "
                  f"pairs here, fmix64 in numpy blocks: the initial placement took {rv['seconds']:.0f} s against "
                  f"{placement['seconds']:.0f} s under modulo) and keeps each source's winner afterwards. When "
                  f"a node joins, only what it outweighs its holder for moves ({rv_hard['sent']:,} puts here), "
                  f"and the hard reload tick looked at {looked_text}: {rv_hard['seconds']:.1f} s.")


if __name__ == "__main__":
    main()
