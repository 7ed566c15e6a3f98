"""11. Dump ingest: revisions/s from MediaWiki XML dumps into Cassandra (spawn.dump_ingest, metadata only and with
content) against a bare mwxml parse of the same files that stores nothing: requests streaming from the local edge,
bzip2 decompression, mwxml walking every revision. The files are the real Chamorro Wikipedia full-history dump
(13,598 revisions) re-split into 4 bzip2 files by page range, served by the local nginx edge. Every path runs
`--rounds` times (5), the rounds interleaved; each row is a path's median run. Single runs on a shared 2-core
machine vary by half, and the machine's speed drifts within seconds, so the goal is judged on the rounds' own
ratios: each round runs the bare parse just before and just after the metadata ingest, back to back, and the
ingest's rate is taken against the mean rate of those two; the goal is the median of the rounds' ratios (the ratio
of the two medians is shown beside it). Before the timed rounds one untimed round of the bare parse and the ingest
warms the Cassandra server: a JVM a minute old spends two to four times the CPU on the same writes while it
compiles, which a spawn writing to a running cluster does not see. Each round writes into a keyspace of its own,
made (and left to settle for two seconds) before its first timed path: no schema change runs beside a timed path,
and no flush or compaction of an earlier round's rows.

The ingest is the spawn's own (spawn.dump_duties: one DumpIngest per file the hub names, each file walked in a
child process, its forkserver started before the timed runs as in a running spawn), reading the files
BW_DUMP_FILES_PER_NODE at a time: 2, the default, and 1 beside it. Beside them, runs show where the time goes: the
ingest with its rows discarded (reading only, one file at a time), the same rows stored with no parsing
(write_pages alone, as the ingest groups them) and the ingest with content.

    .venv/bin/python -m bench.dump_ingest [--parts 4] [--rounds 5]

Uses a throwaway keyspace, dropped at the end. Not a test: numbers depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import bz2
import dataclasses
import functools
import os
import resource
import shutil
import tempfile
import time
import uuid
from typing import Callable
from multiprocessing import forkserver
from pathlib import Path

import mwxml  # type: ignore[import-untyped]
import requests

from bench.common import ROOT, USER_AGENT, cassandra_cpu, cassandra_keyspace, heading, table, verdict
from shared.config import SpawnConfig
from shared.dump_wire import READING, DumpDuty
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.model import Revision
from shared.revisions.store import RevisionStore
from shared.http import make_session
from spawn.dump_duties import DumpRunners
from spawn.dump_ingest import BATCH, Checkpoint, DumpIngest
from spawn.dump_parse import start_walker
from spawn.dump_rows import ExpectedSite
from spawn.dump_stream import Session
from spawn.metrics import SpawnMetrics
from tests.support.dumps import split_pages, unpack_chwiki

GOAL = 0.70
BARE = "bare mwxml parse"
FILES_AT_ONCE = SpawnConfig.dump_files_per_node
INGEST = f"the spawn's ingest into Cassandra, metadata, {FILES_AT_ONCE} files at once (the default)"
POLL_S = 0.02
SETTLE_S = 2.0      # after a keyspace is made, before a round's first timed path
FILES_DIR = ROOT / ".run/nginx/files"
FILES_URL = "http://127.0.0.1:8785/files/"


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def walk_cpu() -> float:
    """CPU seconds of the walk processes that ended: children of the forkserver, which reaps them (its pid is
    multiprocessing's own attribute; 0 before it started)."""
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if not pid:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")      # cutime, cstime


def client_cpu() -> tuple[float, float]:
    return own_cpu(), walk_cpu()


def seconds_of(before: tuple[float, float], server_before: float | None) -> tuple[str, str, str]:
    """(this process's and its walk processes' CPU s, of which the walk processes', the Cassandra server's CPU s
    or "?") since the given readings."""
    server = cassandra_cpu()
    own, walk = client_cpu()
    return (f"{own - before[0] + walk - before[1]:.1f}", f"{walk - before[1]:.1f}",
            "?" if server is None or server_before is None else f"{server - server_before:.1f}")


def bare_parse(http: requests.Session, urls: list[str]) -> tuple[int, float]:
    """(revisions, seconds): stream, decompress and walk every revision, storing nothing."""
    revisions = 0
    started = time.perf_counter()
    for url in urls:
        with http.get(url, stream=True, timeout=(10, 60), headers={"Accept-Encoding": "identity"}) as resp:
            resp.raise_for_status()
            for page in mwxml.Dump.from_file(bz2.BZ2File(resp.raw)).pages:
                for rev in page:
                    revisions += rev.id > 0
    return revisions, time.perf_counter() - started


class Discarding:
    """A store that keeps the groups it is given in memory and writes nothing."""

    def __init__(self) -> None:
        self.groups: list[list[list[Revision]]] = []

    def write_pages(self, pages: list[list[Revision]]) -> None:
        self.groups.append(pages)


def spawn_read(urls: list[str], store: RevisionStore, wiki: str, session_factory: Callable[[], Session], *,
               at_once: int, content: bool = False) -> int:
    """Revisions read by a spawn's dump runners given one duty per file (as the hub names a set's files), at most
    `at_once` files read at once; every file must end done."""
    runners = DumpRunners(store, None, SpawnMetrics(), max_running=at_once, session_factory=session_factory)
    duties = [DumpDuty(f"f{i}", "bench", url, f"http://{wiki}/w/api.php", dbname="chwiki", content=content)
              for i, url in enumerate(urls)]
    try:
        runners.apply(duties)
        while True:
            reports = runners.reports()
            if len(reports) == len(duties) and all(r.state != READING for r in reports.values()):
                break
            time.sleep(POLL_S)
    finally:
        runners.stop()
    failed = {f: r.error for f, r in reports.items() if r.state != "done"}
    if failed:
        raise RuntimeError(f"dump files did not end done: {failed}")
    return sum(r.revisions_read for r in reports.values())


def publish(parts: int) -> tuple[Path, list[str]]:
    work = Path(tempfile.mkdtemp(prefix="bw-dump-bench-"))
    try:
        text = unpack_chwiki(work).read_text(encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    folder = FILES_DIR / f"bench-dumps-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    urls = []
    for i, part in enumerate(split_pages(text, parts), 1):
        name = f"chwiki-pages-meta-history{i}.xml.bz2"
        (folder / name).write_bytes(bz2.compress(part.encode("utf-8")))
        urls.append(f"{FILES_URL}{folder.name}/{name}")
    return folder, urls


Run = tuple[int, float, str, str, str]     # revisions, seconds, client CPU s, walk process CPU s, Cassandra CPU s


def one_round(n: int, urls: list[str], http: requests.Session, in_child, store: CassandraRevisionStore,
              runs: dict[str, list[Run]]) -> None:
    """Every path once, each under wiki keys of this round's own (nothing it writes was written before); the goal's
    ingest between two bare parses, back to back."""

    def timed(label: str, work) -> None:
        started, cpu, server = time.perf_counter(), client_cpu(), cassandra_cpu()
        revisions = work()
        runs.setdefault(label, []).append((revisions, time.perf_counter() - started, *seconds_of(cpu, server)))

    def ingest(label: str, store, wiki: str, **options) -> None:
        options.setdefault("session_factory", in_child)
        with tempfile.TemporaryDirectory() as state:
            run = DumpIngest(urls, wiki=f"{n}.{wiki}", store=store, checkpoint=Checkpoint(Path(state) / "cp.json"),
                             http=http, expected=ExpectedSite(dbname="chwiki"), **options)
            timed(label, lambda: (run.run(), run.progress.totals()["revisions_read"])[1])
    timed(BARE, lambda: bare_parse(http, urls)[0])
    timed(INGEST, lambda: spawn_read(urls, store, f"{n}-m.bench.invalid", in_child, at_once=FILES_AT_ONCE))
    timed(BARE, lambda: bare_parse(http, urls)[0])
    discarded = Discarding()
    ingest("dump_ingest, rows discarded (reading only)", discarded, "ch-r.wikipedia.org")
    if FILES_AT_ONCE != 1:
        timed("the spawn's ingest into Cassandra, metadata, 1 file at a time",
              lambda: spawn_read(urls, store, f"{n}-m1.bench.invalid", in_child, at_once=1))
    timed(f"the spawn's ingest into Cassandra, with content, {FILES_AT_ONCE} files at once",
          lambda: spawn_read(urls, store, f"{n}-w.bench.invalid", in_child, at_once=FILES_AT_ONCE, content=True))
    groups = [[[dataclasses.replace(r, wiki=f"{n}.ch-s.wikipedia.org") for r in rows] for rows in group]
              for group in discarded.groups]

    def write_alone() -> int:
        for group in groups:                # the ingest's own groups, on one thread as its one writer
            store.write_pages(group)
        return sum(len(rows) for group in groups for rows in group)
    timed(f"write_pages alone, the same rows (no parsing; groups of {BATCH:,})", write_alone)


def warm_up(urls: list[str], http: requests.Session, in_child, store: CassandraRevisionStore) -> None:
    """One untimed bare parse and metadata ingest (the server's JIT, the edge's and the page cache's first reads)."""
    bare_parse(http, urls)
    spawn_read(urls, store, "warm.bench.invalid", in_child, at_once=FILES_AT_ONCE)


def round_ratios(bare: list[Run], ingest: list[Run]) -> list[float]:
    """Each round's ingest rate against the mean rate of the two bare parses run just before and just after it
    (`bare` holds two runs a round)."""
    rate = [b[0] / b[1] for b in bare]
    return [(i[0] / i[1]) / ((rate[2 * n] + rate[2 * n + 1]) / 2) for n, i in enumerate(ingest)]


def median_run(runs: list[Run]) -> Run:
    return sorted(runs, key=lambda r: r[1])[len(runs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5, help="every path this many times, interleaved")
    args = parser.parse_args()
    folder, urls = publish(args.parts)
    http = requests.Session()
    http.headers["User-Agent"] = USER_AGENT
    in_child = functools.partial(make_session, USER_AGENT)     # the walk in a child process, as on a spawn
    start_walker()
    size = sum(p.stat().st_size for p in folder.iterdir())
    runs: dict[str, list[Run]] = {}
    try:
        for n in range(-1, args.rounds):
            # each round's own keyspace, made before its first timed path and settled: no schema change beside a
            # timed path, and no flush or compaction of an earlier round's rows in it
            with cassandra_keyspace("bw_bench_dump") as (session, keyspace):
                store = CassandraRevisionStore(session, keyspace)
                time.sleep(SETTLE_S)
                if n < 0:
                    warm_up(urls, http, in_child, store)
                else:
                    one_round(n, urls, http, in_child, store, runs)
                store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    bare = median_run(runs[BARE])
    bare_rate = bare[0] / bare[1]
    rows = []
    for label, tries in runs.items():
        revisions, seconds, cpu_s, walk_s, server_s = median_run(tries)
        rows.append((label, f"{revisions:,}", f"{seconds:.1f}", " / ".join(f"{t[1]:.1f}" for t in tries),
                     f"{revisions / seconds:,.0f}", cpu_s, walk_s if label != BARE else "-",
                     server_s if label != BARE else "-", f"{revisions / seconds / bare_rate:.0%}"))
    ingested = median_run(runs[INGEST])
    of_medians = ingested[0] / ingested[1] / bare_rate
    per_round = round_ratios(runs[BARE], runs[INGEST])
    ratio = sorted(per_round)[len(per_round) // 2]
    print(heading(11, "Dump ingest: revisions/s from XML dumps into Cassandra"))
    print(f"The Chamorro Wikipedia full-history dump ({bare[0]:,} revisions) in {args.parts} bzip2 files "
          f"({size / 1e6:.1f} MB) streamed from the local nginx edge; a throwaway keyspace (replication 1). "
          f"Every path ran {args.rounds} times (the bare parse twice a round, just before and just after the "
          f"metadata ingest at {FILES_AT_ONCE} files at once), the rounds interleaved, after one untimed round that "
          f"warms the server, each round in a keyspace of its own; each row is its median run.\n")
    print(table(("path", "revisions", "seconds (median)", "every run s", "revisions/s", "client CPU s",
                 "of which walk process", "Cassandra CPU s", "of bare parse"), rows, right=(1, 2, 3, 4, 5, 6, 7, 8)))
    print(f"\nThe metadata ingest against the mean of the bare parses just before and after it, round by round: "
          f"{' / '.join(f'{r:.0%}' for r in per_round)}; the ratio of the two medians: {of_medians:.0%}.")
    print(f"\nGoal ≥ {GOAL:.0%} of the bare mwxml parse (metadata ingest, the median of the rounds' ratios): "
          f"{ratio:.0%} — {verdict(ratio >= GOAL)}")


if __name__ == "__main__":
    main()
