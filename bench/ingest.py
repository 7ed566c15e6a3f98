"""3. Ingest against the limit: end-to-end revisions/s from the local MediaWiki into Cassandra by one
spawn (a real `spawn serve` process, host delay 0, the benchmark playing the hub), against a bare
`requests` loop fetching the same histories with the same parameters and storing nothing: the rate
at which the server serves them. The bare loop runs before and after the spawn; the ratio uses
their mean.

    .venv/bin/python -m bench.ingest
"""
import functools
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, NamedTuple

import requests
from prometheus_client.parser import text_string_to_metric_families

from bench import bench_wiki
from bench.common import (LOCAL_WIKI, LOCAL_WIKI_DIR, ROOT, SECRET, SINGLE_NODE, USER_AGENT, Servers,
                          cassandra_keyspace, group_cpu, heading, seeded_articles, table, verdict,
                          wiki_server_cpu)
from shared.hashing import source_uuid, wiki_key
from shared.http import make_session
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import RVPROP, MediaWikiClient
from tools.demo import SERVING, Processes, free_port, latest_revids, wait_http

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


class Harvest(NamedTuple):
    revisions: int          # delivered
    seconds: float          # from the first PUT until every page's newest revision is stored
    spawn_cpu: float        # CPU seconds used meanwhile by the spawn,
    cassandra_cpu: float    # by Cassandra
    wiki_cpu: float | None  # and by the wiki's PHP server (None if not known)
    waited: float           # seconds the spawn's sources waited for the wiki's next batch
    writing: float          # seconds they spent writing to the store


def spawn_harvest(api: str, titles: list[str], keyspace: str, log_dir: Path,
                  wiki_cpu: Callable[[], float | None], *, servers: Servers = SINGLE_NODE,
                  content: bool = False) -> Harvest:
    """One harvest of `titles` by a real spawn process into `keyspace` on `servers` (texts too when
    `content`); `wiki_cpu` reads the wiki server's CPU seconds."""
    http = make_session(USER_AGENT)
    targets = latest_revids(http, api, titles)
    port = free_port(0)
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, BW_NODE_SECRET=SECRET, BW_DATA_DIR=str(log_dir / "data"), BW_HOST_DELAY_S="0",
               BW_CASSANDRA_HOSTS=",".join(servers.hosts), BW_CASSANDRA_PORT=str(servers.port),
               BW_CASSANDRA_KEYSPACE=keyspace,
               BW_LOG_JSON="true", BW_LOG_LEVEL="WARNING", BW_USER_AGENT=USER_AGENT,
               BW_WIKI_ALLOWLIST=wiki_key(api), BW_METRICS_PORT=str(free_port(0)))
    metrics_url = f"http://127.0.0.1:{env['BW_METRICS_PORT']}"        # /metrics is served only there
    procs = Processes(log_dir)
    try:
        # no hub listens there: registration retries quietly, the benchmark sends what a hub would
        nowhere = f"http://127.0.0.1:{free_port(0)}"
        spawn = procs.start("spawn", [str(BIN / "spawn"), "serve", "--hub", nowhere,
                                      "--bind", f"127.0.0.1:{port}"], env)
        wait_http(url + "/health", procs, statuses=SERVING)     # unregistered, so 503, but serving
        cpu, server, wiki = group_cpu(spawn.pid), servers.cpu() or 0.0, wiki_cpu()
        started = time.perf_counter()
        for title in titles:
            sub_id = str(uuid.uuid4())
            spec = {"id": sub_id, "source_uuid": str(source_uuid(api, title)), "tenant_id": "bench",
                    "wiki": api, "title": title, "content": content, "quota": None}
            answer = http.post(f"{url}/v1/subscriptions", json={"drops": [], "puts": [spec]}, headers=AUTH,
                               timeout=10)
            answer.raise_for_status()
            if "error" in answer.json()["puts"][0]:
                raise RuntimeError(f"the spawn refused {title!r}: {answer.json()['puts'][0]['error']}")
        while True:
            procs.check()
            report = http.get(url + "/v1/status", headers=AUTH, timeout=10).json()
            done = {s["spec"]["title"]: s for s in report["subscriptions"]
                    if s["last_rev_id"] is not None and s["last_rev_id"] == targets[s["spec"]["title"]]}
            if len(done) == len(titles):
                seconds = time.perf_counter() - started
                wiki_after = wiki_cpu()
                samples = {s.name: s.value for family in text_string_to_metric_families(
                    http.get(metrics_url + "/metrics", timeout=10).text) for s in family.samples}
                return Harvest(sum(s["revisions"] for s in done.values()), seconds,
                               group_cpu(spawn.pid) - cpu, (servers.cpu() or 0.0) - server,
                               None if wiki is None or wiki_after is None else wiki_after - wiki,
                               samples["bw_spawn_batch_wait_seconds_total"],
                               samples["bw_spawn_store_write_seconds_total"])
            if time.perf_counter() - started > 600:
                raise RuntimeError(f"harvest incomplete after 600 s: {len(done)} of {len(titles)} pages")
            time.sleep(0.05)
    finally:
        procs.stop()
        http.close()


def main() -> None:
    seeded = [p.title for p in seeded_articles()]
    cases = [(f"local wiki: {len(seeded)} seeded pages", LOCAL_WIKI, seeded, LOCAL_WIKI_DIR),
             (f"benchmark wiki: '{bench_wiki.LONG_TITLE}'", bench_wiki.API, [bench_wiki.LONG_TITLE],
              bench_wiki.DIR)]
    http = make_session(USER_AGENT)
    rows, ratios, runs = [], [], []
    log_dir = ROOT / ".run/bench/ingest"
    log_dir.mkdir(parents=True, exist_ok=True)
    bench_wiki.service("up")
    try:
        for label, api, titles, wiki_dir in cases:
            wiki_cpu = functools.partial(wiki_server_cpu, wiki_dir)
            bare_loop(http, api, titles)            # warm the server's caches once, unmeasured
            wiki_before = wiki_cpu()
            before = bare_loop(http, api, titles)
            wiki_after = wiki_cpu()
            wiki_bare = None if None in (wiki_before, wiki_after) else (wiki_after - wiki_before) / before[1]
            with cassandra_keyspace("bw_bench_ingest") as (_, keyspace):
                spawn = spawn_harvest(api, titles, keyspace, log_dir, wiki_cpu)
            after = bare_loop(http, api, titles)
            assert before[0] == after[0] == spawn.revisions, (before[0], after[0], spawn.revisions)
            limit = (before[0] / before[1] + after[0] / after[1]) / 2
            rate = spawn.revisions / spawn.seconds
            ratios.append(rate / limit)
            runs.append((spawn, limit, wiki_bare))
            wiki = "-" if spawn.wiki_cpu is None or wiki_bare is None else \
                f"{wiki_bare:.0%} / {spawn.wiki_cpu / spawn.seconds:.0%}"
            rows.append((label, f"{spawn.revisions:,}", f"{before[0] / before[1]:,.0f}", f"{rate:,.0f}",
                         f"{after[0] / after[1]:,.0f}", f"{rate / limit:.0%}",
                         f"{spawn.spawn_cpu / spawn.seconds:.0%}",
                         f"{1e6 * spawn.spawn_cpu / spawn.revisions:.0f}",
                         f"{spawn.cassandra_cpu / spawn.seconds:.0%}", wiki))
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
          "Both are serial per host. Ratio: spawn ÷ the mean of the bare runs before and after. CPU: "
          "of each process, during the spawn's run (the wiki's PHP server also during the bare loop "
          "before).\n")
    print(table(("harvest", "revisions", "bare loop before (rev/s)", "spawn → Cassandra (rev/s)",
                 "bare loop after (rev/s)", "spawn ÷ bare", "spawn CPU (of one core)",
                 "spawn CPU µs/revision", "Cassandra CPU (of one core)",
                 "wiki CPU (of one core): bare / spawn"),
                rows, right=range(1, 10)))
    worst = min(ratios)
    print(f"\nGoal ≥ {GOAL:.0%} of the bare loop: {', '.join(f'{r:.0%}' for r in ratios)} — "
          f"{verdict(worst >= GOAL)}.")
    if worst < GOAL and all(spawn.wiki_cpu is not None and wiki_bare for spawn, _, wiki_bare in runs):
        print("\n" + why(runs, parse_us))


def why(runs: list[tuple[Harvest, float, float]], parse_us: float) -> str:
    """The missed goal explained from what the runs measured."""
    cores = os.cpu_count() or 1

    def each(fmt) -> str:
        return " / ".join(fmt(*run) for run in runs)

    def us(seconds: float, spawn: Harvest) -> str:
        return f"{1e6 * seconds / spawn.revisions:.0f}"

    def cpu(spawn: Harvest) -> float:
        return 1e6 * (spawn.spawn_cpu + spawn.cassandra_cpu + spawn.wiki_cpu) / spawn.revisions

    def ceiling(spawn: Harvest, limit: float, _) -> str:
        return f"{cores * 1e6 / cpu(spawn) / limit:.0%}"
    last, limit, _ = runs[-1]            # one page: its writing and waiting add up to the run's time
    writing = (1e6 * last.writing / last.revisions) / (1e6 / limit)
    pace = "longer than" if writing > 1.25 else "less time than" if writing < 0.8 else "about as long as"
    return (
        f"Why: the machine's {cores} cores carry the wiki, Cassandra and the spawn together, with whatever "
        f"else runs (figures: seeded pages / long history). Per revision the three spent "
        f"{each(lambda s, *_: f'{cpu(s):.0f}')} µs of CPU: spawn {each(lambda s, *_: us(s.spawn_cpu, s))}, "
        f"Cassandra {each(lambda s, *_: us(s.cassandra_cpu, s))}, "
        f"wiki {each(lambda s, *_: us(s.wiki_cpu, s))}. At that cost {cores} cores carry at most "
        f"{each(ceiling)} of the bare loop, in perfect parallel and with nothing else running. The wiki's "
        f"PHP server, busy {each(lambda s, limit, bare: f'{bare:.0%}')} of a core serving the bare loop, got "
        f"{each(lambda s, *_: f'{s.wiki_cpu / s.seconds:.0%}')} during the spawn's runs. The spawn fetches a "
        f"page's next batch while it writes the current one; per revision its sources spent "
        f"{each(lambda s, *_: us(s.writing, s))} µs writing and {each(lambda s, *_: us(s.waited, s))} µs "
        f"waiting for the wiki (summed over pages harvested side by side), while the wiki takes "
        f"{each(lambda s, limit, bare: f'{1e6 / limit:.0f}')} µs per revision in the bare loop: on the long "
        f"history writing takes {pace} the wiki's answers, and both slow down on the shared cores. Decoding "
        f"the API's JSON into revisions is {parse_us:.0f} µs of the spawn's CPU per revision; most of the "
        f"rest is the Cassandra driver binding and sending about 60 values per revision across the five "
        f"query tables (see the writer table). The local wiki also answers far faster than a public wiki "
        f"under `maxlag` and a per-host delay, so this ratio is the spawn's worst case. What would close it: "
        f"Cassandra and the spawns on hosts of their own, as in production; on this machine, less CPU per "
        f"revision in the spawn and in Cassandra (fewer requests, i.e. batches beyond the server's default "
        f"warning thresholds, or fewer denormalised columns).")


if __name__ == "__main__":
    main()
