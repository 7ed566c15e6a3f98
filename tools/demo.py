"""`make demo`: a hub, its scheduler and two spawns as real processes harvest a wiki, then stop.

Embedded default (STACK=embedded): SQLite for configuration and revisions. STACK=full: PostgreSQL and
Cassandra from `make services`. WIKI=https://…/api.php TITLES='A|B' points it at another wiki.
"""
import argparse
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import requests

from blackwidow.admin_client import AdminClient
from shared.hashing import wiki_key
from shared.http import make_session

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOCAL_WIKI = "http://127.0.0.1:8780/api.php"
PG_ADMIN_URL = "postgresql+psycopg2://blackwidow:blackwidow@127.0.0.1:55432/blackwidow"
USER_AGENT = "BlackWidow-demo/0.1 (https://github.com/blackwidow-harvester; ops@example.org) python-requests"


def free_port(preferred: int) -> int:
    for port in (preferred, 0):
        with contextlib.closing(socket.socket()) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free port")


class Processes:
    """Every process the demo starts, each in its own process group, stopped together."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], env: dict) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=ROOT)
        self.procs.append((name, proc))
        return proc

    def check(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.log_dir / (name + '.log')}")

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _, proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


SERVING = (200, 503)


def wait_http(url: str, procs: Processes, timeout: float = 60, statuses: tuple[int, ...] = (200,)) -> None:
    """Until `url` answers one of `statuses` (a /health's 503 still proves the process serves)."""
    deadline = time.monotonic() + timeout
    while True:
        procs.check()
        with contextlib.suppress(requests.RequestException):
            if requests.get(url, timeout=2).status_code in statuses:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")
        time.sleep(0.3)


def latest_revids(http: requests.Session, api: str, titles: list[str]) -> dict[str, int]:
    """The wiki's own lastrevid per requested title (redirects followed), 50 titles a request."""
    out = {}
    for i in range(0, len(titles), 50):
        batch = titles[i:i + 50]
        body = http.get(api, params={"action": "query", "prop": "info", "titles": "|".join(batch),
                                     "redirects": 1, "format": "json", "formatversion": 2}, timeout=30).json()
        query = body["query"]
        alias = {n["from"]: n["to"] for n in query.get("normalized", [])}
        alias.update({r["from"]: r["to"] for r in query.get("redirects", [])})
        pages = {p["title"]: p.get("lastrevid") for p in query["pages"]}
        for title in batch:
            target = title
            while target in alias:
                target = alias[target]
            out[title] = pages.get(target)
    return out


def stack_env(stack: str, data_dir: Path) -> dict:
    env = {}
    if stack == "full":
        import sqlalchemy as sa
        engine = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text('DROP DATABASE IF EXISTS "bw_demo" WITH (FORCE)'))
            conn.execute(sa.text('CREATE DATABASE "bw_demo"'))
        engine.dispose()
        env["BW_DATABASE_URL"] = PG_ADMIN_URL.rsplit("/", 1)[0] + "/bw_demo"
        env["BW_CASSANDRA_HOSTS"] = "127.0.0.1"
        env["BW_CASSANDRA_KEYSPACE"] = "bw_demo"
    return env


def reset_cassandra_keyspace(keyspace: str) -> None:
    from shared.revisions.cassandra_store import cluster_for
    from shared.revisions.cql_schema import apply_schema
    cluster = cluster_for(["127.0.0.1"], 9042)
    try:
        session = cluster.connect()
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        apply_schema(session, keyspace, replication=1)
    finally:
        cluster.shutdown()


def render(subs: list[dict], nodes: list[dict], rates: dict, started: float) -> str:
    lines = [f"-- {time.monotonic() - started:5.1f} s ----------------------------------------------------------",
             f"{'subscription':40} {'state':14} {'revisions':>9} {'rev/s':>8}  node"]
    for s in sorted(subs, key=lambda s: s["title"]):
        node = (s.get("node") or "-")[:8]
        lines.append(f"{s['title'][:40]:40} {s['state']:14} {s['revisions']:9d} {rates.get(s['id'], 0):8.0f}  {node}")
    lines.append(f"{'node':10} {'url':28} {'state':6} subscriptions")
    for n in nodes:
        lines.append(f"{n['id'][:8]:10} {n['url']:28} {n['state']:6} {n.get('subscriptions', 0)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stack", default=os.environ.get("STACK", "embedded"), choices=("embedded", "full"))
    parser.add_argument("--wiki", default=os.environ.get("WIKI") or LOCAL_WIKI)
    parser.add_argument("--titles", default=os.environ.get("TITLES", ""), help="'|'-separated, for --wiki")
    parser.add_argument("--spawns", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)

    local = args.wiki == LOCAL_WIKI
    expected = None
    if local:
        from tools.wikigen import load_expected
        expected = load_expected(ROOT / ".run/mediawiki/seed/expected.json.gz")
        titles = [p.title for p in expected.pages if p.ns == 0]
    else:
        titles = [t for t in args.titles.split("|") if t.strip()]
        if not titles:
            parser.error("TITLES='A|B|…' is required with WIKI")

    run = ROOT / ".run/demo"
    shutil.rmtree(run, ignore_errors=True)
    (run / "logs").mkdir(parents=True)
    host = urlsplit(args.wiki).netloc
    admin_token, node_secret = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    env = dict(os.environ, BW_DATA_DIR=str(run / "data"), BW_ADMIN_TOKEN=admin_token, BW_NODE_SECRET=node_secret,
               BW_WIKI_ALLOWLIST=host, BW_POLL_INTERVAL_S="1", BW_LOG_JSON="true", BW_LOG_LEVEL="INFO",
               BW_HOST_DELAY_S="0" if local else "0.2", BW_USER_AGENT=USER_AGENT)
    (run / "data").mkdir()
    env.update(stack_env(args.stack, run / "data"))
    if args.stack == "full":
        reset_cassandra_keyspace(env["BW_CASSANDRA_KEYSPACE"])

    procs = Processes(run / "logs")
    hub_port = free_port(8700)
    hub = f"http://127.0.0.1:{hub_port}"
    http = make_session(USER_AGENT)
    admin = AdminClient(http, hub, admin_token)
    started = time.monotonic()
    try:
        subprocess.run([str(BIN / "blackwidow"), "migrate"], env=env, check=True, cwd=ROOT)
        procs.start("hub", [str(BIN / "blackwidow"), "serve", "--bind", f"127.0.0.1:{hub_port}"], env)
        wait_http(hub + "/health", procs, statuses=SERVING)      # 503 until the scheduler leads
        procs.start("scheduler", [str(BIN / "blackwidow"), "scheduler"], env)
        wait_http(hub + "/health", procs)                          # 200: the scheduler leads and ticks
        for i in range(args.spawns):
            port = free_port(8701 + i)
            procs.start(f"spawn{i + 1}", [str(BIN / "spawn"), "serve", "--hub", hub,
                                          "--bind", f"127.0.0.1:{port}"], env)
            wait_http(f"http://127.0.0.1:{port}/health", procs)
        print(f"hub {hub}, scheduler and {args.spawns} spawns started ({args.stack} stack); logs in {run / 'logs'}")

        tenant = admin.call("POST", "/v1/tenants", body={"name": "demo", "quota": None})
        created = admin.call("POST", "/v1/subscriptions/bulk", body={
            "tenant_id": tenant["id"], "wiki": args.wiki, "items": [{"title": t} for t in titles]})
        print(f"tenant {tenant['id']} subscribed to {created['count']} articles on {args.wiki}")

        targets = latest_revids(http, args.wiki, titles)
        previous, rates, done = {}, {}, False
        last_print = 0.0
        while not done:
            procs.check()
            if time.monotonic() - started > args.timeout:
                raise RuntimeError(f"harvest not complete after {args.timeout:.0f} s")
            subs = list(admin.pages("/v1/subscriptions", {"limit": 1000}))
            nodes = admin.call("GET", "/v1/nodes")["items"]
            now = time.monotonic()
            for s in subs:
                before = previous.get(s["id"])
                if before:
                    rates[s["id"]] = (s["revisions"] - before[1]) / max(now - before[0], 1e-6)
                previous[s["id"]] = (now, s["revisions"])
            done = bool(subs) and all(
                targets.get(s["title"]) is None or s.get("last_rev_id") == targets[s["title"]] for s in subs)
            if done or now - last_print >= (1 if sys.stdout.isatty() else 5):
                if sys.stdout.isatty():
                    print("\033[2J\033[H", end="")
                print(render(subs, nodes, rates, started), flush=True)
                last_print = now
            time.sleep(1)
        elapsed = time.monotonic() - started
        return report(env, args, subs, expected, elapsed)
    finally:
        procs.stop()
        print("stopped hub, scheduler and spawns")


def report(env, args, subs, expected, elapsed) -> int:
    from shared.config import SpawnConfig
    from shared.revisions.factory import open_store
    store = open_store(SpawnConfig.from_env(env))
    try:
        wiki = wiki_key(args.wiki)
        stored = list(store.revisions(wiki))
    finally:
        store.close()
    total = len(stored)
    delivered = sum(s["revisions"] for s in subs)
    print(f"\nharvest complete in {elapsed:.1f} s: {total} revisions stored "
          f"({total / elapsed:.0f} rev/s end to end), {delivered} delivered to {len(subs)} subscriptions")
    ok = True
    if expected is not None:
        seeded = sum(len(p.revisions) for p in expected.pages if p.ns == 0 and not p.is_redirect)
        ok = total == seeded
        print(f"seeded revisions in the wiki's articles: {seeded} -> {'equal' if ok else 'DIFFERENT'}")
    # one analyst question: who edited the most-edited article most, and in which years
    by_page = Counter(r.page_id for r in stored)
    if by_page:
        page_id, count = by_page.most_common(1)[0]
        revs = [r for r in stored if r.page_id == page_id]
        title = revs[0].title
        editors = Counter(r.user for r in revs if r.user).most_common(5)
        years = Counter(r.timestamp.year for r in revs)
        print(f"\nanalyst query: top editors of '{title}' ({count} revisions)")
        for user, n in editors:
            print(f"  {n:5d}  {user}")
        busiest = max(years, key=years.get)
        print(f"  busiest year {busiest} with {years[busiest]} edits; first {min(years)}, last {max(years)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
