"""5. Hub scale: the real poll tick (blackwidow.poller.poll_once) on PostgreSQL against 1,000
simulated spawns (bench.spawn_farm: real HTTP endpoints, one port each, in a separate process)
holding 100,000 subscriptions.

Measured, in a hub process of its own (so its memory is the tick's alone):
  initial placement  every subscription sent once (no goal; the cost of a cold start)
  full poll cycle    a steady tick: poll every node, route, plan, nothing to send
  soft reload        1,000 subscriptions changed (their quota, as the admin API does) then one tick
  hard reload        one node joins, then one tick (modulo moves nearly everything, rendezvous ~1/n)
  hub memory         the hub process's peak RSS

    .venv/bin/python -m bench.hub_scale [--nodes 1000] [--subscriptions 100000] [--routing modulo,rendezvous]
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid

from bench.common import SECRET, heading, pg_database, table, verdict

WIKI = "https://en.wikipedia.org/w/api.php"
GOALS = {"cycle": 5.0, "hard": 15.0, "soft": 2.0, "memory_mb": 500.0}


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


def hub(db_url: str, routing: str, join_url: str, changes: int, cycles: int) -> None:
    """Runs in its own process; prints one JSON line per measured tick."""
    import sqlalchemy as sa

    from blackwidow.db import make_sessionmaker
    from blackwidow.models import Subscription
    from blackwidow.poller import PollerState, poll_once
    from blackwidow.scheduler import USER_AGENT
    from blackwidow.spawn_client import SpawnClient
    from blackwidow.store import register_node
    from shared.config import HubConfig
    from shared.http import make_session

    class TimedClient(SpawnClient):
        """The scheduler's client, noting when a tick's first send starts and its last one ends."""
        window: list[float] = []
        lock = threading.Lock()

        def put(self, *args, **kwargs):
            return self._timed(super().put, *args, **kwargs)

        def drop(self, *args, **kwargs):
            return self._timed(super().drop, *args, **kwargs)

        def _timed(self, call, *args, **kwargs):
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                with self.lock:
                    self.window[:] = [min(self.window[0], started) if self.window else started,
                                      time.perf_counter()]

    config = HubConfig.from_env({"BW_NODE_SECRET": SECRET, "BW_ADMIN_TOKEN": "unused",
                                 "BW_DATABASE_URL": db_url, "BW_ROUTING": routing})
    maker = make_sessionmaker(config.database_url)
    # the scheduler's own session settings (blackwidow.scheduler.serve)
    client = TimedClient(make_session(USER_AGENT, pool_size=32), config.node_secret)
    state = PollerState()

    def tick(phase: str) -> None:
        client.window.clear()
        r = poll_once(maker, client, config, state=state)
        rss, peak = _rss_mb()
        sends = client.window[1] - client.window[0] if client.window else 0.0
        print(json.dumps({"phase": phase, "seconds": r.seconds, "send_s": sends, "polled": r.polled,
                          "failed": len(r.failed), "kind": r.kind, "sent": r.sent,
                          "send_failures": r.send_failures, "dropped": r.dropped, "adopted": r.adopted,
                          "rss_mb": rss, "peak_mb": peak}), flush=True)

    tick("initial placement")
    tick("first poll after placement")
    for _ in range(cycles):
        tick("full poll cycle")
    with maker.begin() as session:
        ids = session.scalars(sa.select(Subscription.id).order_by(Subscription.id).limit(changes)).all()
        session.execute(sa.update(Subscription).where(Subscription.id.in_(ids)).values(quota=1_000_000))
    tick("soft reload")
    with maker.begin() as session:
        register_node(session, join_url)
    tick("hard reload")
    tick("full poll cycle after")


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
                    "--join", join_url, "--changes", str(changes), "--cycles", str(cycles)]
            hub_proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
            ticks = []
            for line in hub_proc.stdout:
                if line.startswith("{"):
                    ticks.append(json.loads(line))
                    print(f"hub_scale: {routing} {ticks[-1]['phase']}: {ticks[-1]['seconds']:.1f} s",
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
    parser.add_argument("--subscriptions", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--routing", default="modulo,rendezvous", help="comma-separated strategies to run")
    parser.add_argument("--hub", help=argparse.SUPPRESS)      # internal: run as the hub process
    parser.add_argument("--join", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hub:
        hub(args.hub, args.routing, args.join, args.changes, args.cycles)
        return

    results = {}
    for routing in args.routing.split(","):
        started = time.monotonic()
        results[routing] = run(args.nodes, args.subscriptions, routing, args.changes, args.cycles)
        print(f"hub_scale: {routing} done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    report(args, results)


def report(args, results: dict[str, list[dict]]) -> None:
    print(heading(5, f"Hub scale: {args.nodes:,} spawns, {args.subscriptions:,} subscriptions"))
    print(f"`poll_once` on PostgreSQL, in a hub process of its own with the scheduler's HTTP client "
          f"settings, against {args.nodes:,} simulated spawns (`bench.spawn_farm`: one asyncio process, a "
          f"real HTTP port per node, answering as spawns do). Each row is one tick. *Sends*: wall time from "
          f"the tick's first PUT/DELETE to its last. Soft reload: {args.changes:,} subscriptions get a new "
          f"quota (as the admin API does), then one tick. Hard reload: one node joins, then one tick. The "
          f"first poll after the placement also records the {args.subscriptions:,} counters the nodes report "
          f"for the first time. Hub and spawns share the machine's 2 cores with other work.\n")
    rows = []
    for routing, ticks in results.items():
        for t in ticks:
            rows.append((routing, t["phase"], f"{t['seconds']:.2f}", f"{t['send_s']:.2f}", t["polled"],
                         t["kind"] or "-", t["sent"], t["dropped"], t["send_failures"] + t["failed"],
                         f"{t['rss_mb']:.0f}"))
    print(table(("routing", "tick", "seconds", "sends (s)", "nodes polled", "reload", "puts", "drops",
                 "failures", "hub RSS MB"), rows, right=range(2, 10)))
    print()
    for routing, ticks in results.items():
        by: dict[str, list[dict]] = {}
        for t in ticks:
            by.setdefault(t["phase"], []).append(t)
        cycles = sorted(t["seconds"] for t in by["full poll cycle"])
        cycle = cycles[len(cycles) // 2]
        hard, soft = by["hard reload"][0], by["soft reload"][0]
        peak = max(t["peak_mb"] for t in ticks)
        print(f"- {routing}: full poll cycle {cycle:.2f} s, median of {len(cycles)} (goal ≤ "
              f"{GOALS['cycle']:.0f} s) — {verdict(cycle <= GOALS['cycle'])}; hard reload tick "
              f"{hard['seconds']:.2f} s ({hard['sent']:,} puts, {hard['dropped']:,} drops; goal ≤ "
              f"{GOALS['hard']:.0f} s) — {verdict(hard['seconds'] <= GOALS['hard'])}; soft reload of "
              f"{args.changes:,} changes: sends {soft['send_s']:.2f} s, whole tick {soft['seconds']:.2f} s "
              f"(goal ≤ {GOALS['soft']:.0f} s for the reload) — {verdict(soft['send_s'] <= GOALS['soft'])}; "
              f"hub peak memory {peak:.0f} MB (goal ≤ {GOALS['memory_mb']:.0f} MB) — "
              f"{verdict(peak <= GOALS['memory_mb'])}.")
    notes(args, results)


def notes(args, results: dict[str, list[dict]]) -> None:
    """Why a hard reload under modulo misses its goal, from this run's own numbers."""
    ticks = {(routing, t["phase"]): t for routing, ts in results.items() for t in ts}
    hard = ticks.get(("modulo", "hard reload"))
    placement = ticks.get(("modulo", "initial placement"))
    if hard is None or placement is None or hard["seconds"] <= GOALS["hard"]:
        return
    requests = hard["sent"] + hard["dropped"]
    rate = placement["sent"] / max(placement["send_s"], 1e-9)
    print(f"\nWhy the modulo hard reload misses: one node joining moves {hard['sent']:,} of the "
          f"{args.subscriptions:,} subscriptions under modulo (see the movement table), and each move is two "
          f"requests, a DELETE on the old node and a PUT on the new one: {requests:,} requests, sent at "
          f"about {rate:,.0f} a second (the initial placement shows the same rate). The hub is CPU-bound "
          f"there: one Python process, 32 sender threads, a few hundred microseconds of HTTP client work per "
          f"request. What closes it: rendezvous routing (`BW_ROUTING=rendezvous`, measured above) moves only "
          f"what the new node wins; under modulo, batched sends (one request per node carrying all its drops "
          f"and puts, a bulk route on the spawn's node API) would cut {requests:,} requests to about 2,000, "
          f"the shape the steady poll already has ({args.nodes:,} requests carrying {args.subscriptions:,} "
          f"statuses).")
    rv = ticks.get(("rendezvous", "initial placement"))
    if rv is not None:
        print(f"\nRendezvous pays once per scheduler start: its first tick computes a weight per source and "
              f"node ({args.subscriptions * args.nodes:,} hashes here: the initial placement took "
              f"{rv['seconds']:.0f} s against {placement['seconds']:.0f} s under modulo). "
              f"`blackwidow.router` keeps each source's winner afterwards, so later ticks cost a lookup per "
              f"source and a joining node one hash per source.")


if __name__ == "__main__":
    main()
