"""3. Ingest against the limit: end-to-end revisions/s from the local MediaWiki into Cassandra by one
spawn (a real `spawn serve` process, host delay 0, the benchmark playing the hub), against a bare
`requests` loop fetching the same histories with the same parameters and storing nothing: the rate
at which the server serves them. The bare loop runs before and after the spawn; the ratio uses
their mean.

    .venv/bin/python -m bench.ingest
"""
import json
import os
import sys
import time
import uuid
from pathlib import Path

import requests

from bench import bench_wiki
from bench.common import (CASSANDRA_HOSTS, LOCAL_WIKI, ROOT, SECRET, USER_AGENT, cassandra_cpu,
                          cassandra_keyspace, group_cpu, heading, seeded_articles, table, verdict)
from shared.hashing import source_uuid, wiki_key
from shared.http import make_session
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import RVPROP, MediaWikiClient
from tools.demo import Processes, free_port, latest_revids, wait_http

GOAL = 0.80
BIN = Path(sys.executable).parent
AUTH = {"Authorization": f"Bearer {SECRET}"}


def bare_loop(http: requests.Session, api: str, titles: list[str]) -> tuple[int, float]:
    """(revisions, seconds) fetching every history oldest first, rvlimit=max, following continue."""
    revisions = 0
    started = time.perf_counter()
    for title in titles:
        params = {"action": "query", "format": "json", "formatversion": "2", "errorformat": "plaintext",
                  "maxlag": "5", "prop": "revisions", "titles": title, "rvlimit": "max", "rvdir": "newer",
                  "rvprop": RVPROP, "rvslots": "main"}
        cont: dict = {}
        while True:
            body = http.get(api, params={**params, **cont}, timeout=60).json()
            revisions += len(body["query"]["pages"][0].get("revisions", []))
            if "continue" not in body:
                break
            cont = body["continue"]
    return revisions, time.perf_counter() - started


def parse_cost(http: requests.Session, api: str, title: str) -> float:
    """CPU µs per revision the spawn's client spends decoding and validating one 500-revision batch."""
    client = MediaWikiClient(http, api, limiter=HostLimiter(0.0))
    page = client.resolve(title)
    body = client.query({"prop": "revisions", "pageids": str(page.page_id), "rvlimit": "max",
                         "rvdir": "newer", "rvprop": RVPROP, "rvslots": "main"})
    text = json.dumps(body)
    started = time.process_time()
    for _ in range(10):
        revisions, _ = client._parse_batch(json.loads(text), page, False)
    return 1e6 * (time.process_time() - started) / (10 * len(revisions))


def spawn_harvest(api: str, titles: list[str], keyspace: str,
                  log_dir: Path) -> tuple[int, float, float, float]:
    """(revisions delivered, seconds from the first PUT until every page's newest revision is stored,
    CPU seconds the spawn used meanwhile, CPU seconds Cassandra used meanwhile)."""
    http = make_session(USER_AGENT)
    targets = latest_revids(http, api, titles)
    port = free_port(0)
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, BW_NODE_SECRET=SECRET, BW_DATA_DIR=str(log_dir / "data"), BW_HOST_DELAY_S="0",
               BW_CASSANDRA_HOSTS=",".join(CASSANDRA_HOSTS), BW_CASSANDRA_KEYSPACE=keyspace,
               BW_LOG_JSON="true", BW_LOG_LEVEL="WARNING", BW_USER_AGENT=USER_AGENT,
               BW_WIKI_ALLOWLIST=wiki_key(api))
    procs = Processes(log_dir)
    try:
        # no hub listens there: registration retries quietly, the benchmark sends what a hub would
        nowhere = f"http://127.0.0.1:{free_port(0)}"
        spawn = procs.start("spawn", [str(BIN / "spawn"), "serve", "--hub", nowhere,
                                      "--bind", f"127.0.0.1:{port}"], env)
        wait_http(url + "/health", procs)
        cpu, server = group_cpu(spawn.pid), cassandra_cpu() or 0.0
        started = time.perf_counter()
        for title in titles:
            sub_id = str(uuid.uuid4())
            spec = {"id": sub_id, "source_uuid": str(source_uuid(api, title)), "tenant_id": "bench",
                    "wiki": api, "title": title, "content": False, "quota": None}
            answer = http.put(f"{url}/v1/subscriptions/{sub_id}", json=spec, headers=AUTH, timeout=10)
            answer.raise_for_status()
        while True:
            procs.check()
            report = http.get(url + "/v1/status", headers=AUTH, timeout=10).json()
            done = {s["spec"]["title"]: s for s in report["subscriptions"]
                    if s["last_rev_id"] is not None and s["last_rev_id"] == targets[s["spec"]["title"]]}
            if len(done) == len(titles):
                return (sum(s["revisions"] for s in done.values()), time.perf_counter() - started,
                        group_cpu(spawn.pid) - cpu, (cassandra_cpu() or 0.0) - server)
            if time.perf_counter() - started > 600:
                raise RuntimeError(f"harvest incomplete after 600 s: {len(done)} of {len(titles)} pages")
            time.sleep(0.05)
    finally:
        procs.stop()
        http.close()


def main() -> None:
    seeded = [p.title for p in seeded_articles()]
    cases = [(f"local wiki: {len(seeded)} seeded pages", LOCAL_WIKI, seeded),
             (f"benchmark wiki: '{bench_wiki.LONG_TITLE}'", bench_wiki.API, [bench_wiki.LONG_TITLE])]
    http = make_session(USER_AGENT)
    rows, ratios, busy = [], [], []
    log_dir = ROOT / ".run/bench/ingest"
    log_dir.mkdir(parents=True, exist_ok=True)
    bench_wiki.service("up")
    try:
        for label, api, titles in cases:
            bare_loop(http, api, titles)            # warm the server's caches once, unmeasured
            before = bare_loop(http, api, titles)
            with cassandra_keyspace("bw_bench_ingest") as (_, keyspace):
                spawn = spawn_harvest(api, titles, keyspace, log_dir)
            after = bare_loop(http, api, titles)
            assert before[0] == after[0] == spawn[0], (before[0], after[0], spawn[0])
            limit = (before[0] / before[1] + after[0] / after[1]) / 2
            rate = spawn[0] / spawn[1]
            ratios.append(rate / limit)
            busy.append((spawn[2] / spawn[1], spawn[3] / spawn[1]))
            rows.append((label, f"{spawn[0]:,}", f"{before[0] / before[1]:,.0f}", f"{rate:,.0f}",
                         f"{after[0] / after[1]:,.0f}", f"{rate / limit:.0%}", f"{spawn[2] / spawn[1]:.0%}",
                         f"{1e6 * spawn[2] / spawn[0]:.0f}", f"{spawn[3] / spawn[1]:.0%}"))
        parse_us = parse_cost(http, LOCAL_WIKI, seeded[0])
    finally:
        bench_wiki.service("down")
        http.close()

    print(heading(3, "Ingest against the limit: revisions/s from MediaWiki into Cassandra"))
    print("One real spawn process (`spawn serve`, host delay 0, Cassandra store in a throwaway keyspace) is "
          "sent "
          "a subscription per page, as the hub would; the clock runs from the first PUT until every page's "
          "newest revision is stored. The bare loop fetches the same histories with the same parameters "
          "(rvlimit=max, metadata) one request at a time and stores nothing: the server's serving rate. "
          "Both are serial per host. Ratio: spawn ÷ the mean of the bare runs before and after.\n")
    print(table(("harvest", "revisions", "bare loop before (rev/s)", "spawn → Cassandra (rev/s)",
                 "bare loop after (rev/s)", "spawn ÷ bare", "spawn CPU (of one core)",
                 "spawn CPU µs/revision", "Cassandra CPU (of one core)"), rows, right=range(1, 9)))
    worst = min(ratios)
    print(f"\nGoal ≥ {GOAL:.0%} of the bare loop: {', '.join(f'{r:.0%}' for r in ratios)} — "
          f"{verdict(worst >= GOAL)}.")
    if worst < GOAL:
        spawn_busy = ", ".join(f"{b[0]:.0%}" for b in busy)
        server_busy = ", ".join(f"{b[1]:.0%}" for b in busy)
        print(f"\nWhy: the harvest is paced by the store's writes, not by the wiki. A page's revisions come "
              f"in batches of 500; the spawn fetches the next batch while it writes the current one, and the "
              f"wiki serves a batch several times faster than the Cassandra writer stores it (compare the "
              f"bare loop with the writer table). Writing costs the spawn a few hundred µs of CPU per "
              f"revision (the column above; decoding the API's JSON into revisions is {parse_us:.0f} µs of "
              f"it), spent in the driver's "
              f"three or so requests per revision across the query tables, and the spawn, Cassandra "
              f"({server_busy} of a core) and the PHP server share two cores with other work; the spawn "
              f"process itself ran at {spawn_busy} of a core. The local wiki also answers far faster than a "
              f"public wiki under `maxlag` and a per-host delay, so this ratio is the spawn's worst case. "
              f"What would close it: less driver work per revision (the per-revision tables revisions_by_id "
              f"and revisions_by_day take a request each), overlapping a page's successive batch writes "
              f"(moving the resume pointer only in order), or writing from a process of its own.")


if __name__ == "__main__":
    main()
