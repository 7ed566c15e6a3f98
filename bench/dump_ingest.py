"""11. Dump ingest: revisions/s from MediaWiki XML dumps into Cassandra (spawn.dump_ingest, metadata only and with
content) against a bare mwxml parse of the same files that stores nothing: requests streaming from the local edge,
bzip2 decompression, mwxml walking every revision. The files are the real Chamorro Wikipedia full-history dump
(13,598 revisions) re-split into 4 bzip2 files by page range, served by the local nginx edge. The bare parse runs
before and after the ingests; the ratio uses their mean.

Beside the ingest itself, three runs show where its time goes: the ingest with its rows discarded (reading only),
the same rows stored with no parsing (write_pages alone, as the ingest groups them) and the ingest through one
write() per page (the path before write_pages, on 4 writer threads as it ran).

    .venv/bin/python -m bench.dump_ingest [--parts 4]

Uses a throwaway keyspace, dropped at the end. Not a test: numbers depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import bz2
import dataclasses
import resource
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import mwxml  # type: ignore[import-untyped]
import requests

from bench.common import ROOT, USER_AGENT, cassandra_cpu, cassandra_keyspace, heading, table, verdict
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.model import Revision
from spawn.dump_ingest import BATCH, Checkpoint, DumpIngest
from spawn.dump_rows import ExpectedSite
from tests.support.dumps import split_pages, unpack_chwiki

GOAL = 0.70
FILES_DIR = ROOT / ".run/nginx/files"
FILES_URL = "http://127.0.0.1:8785/files/"


def client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def seconds_of(cpu_before: float, server_before: float | None) -> tuple[str, str]:
    """(this process's CPU s, the Cassandra server's CPU s or "?") since the given readings."""
    server = cassandra_cpu()
    return (f"{client_cpu() - cpu_before:.1f}",
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


class PagePerWrite:
    """The path before write_pages: one store.write() per page."""

    def __init__(self, store: CassandraRevisionStore):
        self.store = store

    def write_pages(self, pages: list[list[Revision]]) -> None:
        for rows in pages:
            self.store.write(rows)


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", type=int, default=4)
    args = parser.parse_args()
    folder, urls = publish(args.parts)
    http = requests.Session()
    http.headers["User-Agent"] = USER_AGENT
    size = sum(p.stat().st_size for p in folder.iterdir())
    rows = []
    try:
        cpu = client_cpu()
        first = bare_parse(http, urls)
        first_cpu = seconds_of(cpu, None)[0]
        runs = []

        def ingest(label: str, store, wiki: str, **options) -> None:
            with tempfile.TemporaryDirectory() as state:
                run = DumpIngest(urls, wiki=wiki, store=store, checkpoint=Checkpoint(Path(state) / "cp.json"),
                                 http=http, expected=ExpectedSite(dbname="chwiki"), **options)
                started, cpu, server = time.perf_counter(), client_cpu(), cassandra_cpu()
                run.run()
                runs.append((label, run.progress.totals()["revisions_read"], time.perf_counter() - started,
                             *seconds_of(cpu, server)))
        discarded = Discarding()
        ingest("dump_ingest, rows discarded (reading only)", discarded, "ch-r.wikipedia.org")
        with cassandra_keyspace("bw_bench_dump") as (session, keyspace):
            store = CassandraRevisionStore(session, keyspace)
            ingest("dump_ingest into Cassandra, metadata", store, "ch-m.wikipedia.org")
            ingest("dump_ingest into Cassandra, with content", store, "ch-w.wikipedia.org", content=True)
            groups = [[[dataclasses.replace(r, wiki="ch-s.wikipedia.org") for r in rows] for rows in group]
                      for group in discarded.groups]
            started, cpu, server = time.perf_counter(), client_cpu(), cassandra_cpu()
            for group in groups:                # the ingest's own groups, on one thread as its one writer
                store.write_pages(group)
            runs.append((f"write_pages alone, the same rows (no parsing; groups of {BATCH:,})",
                         sum(len(rows) for group in groups for rows in group),
                         time.perf_counter() - started, *seconds_of(cpu, server)))
            ingest("dump_ingest into Cassandra, one write() per page (before)", PagePerWrite(store),
                   "ch-p.wikipedia.org", writers=4, batch=500)
            store.close()
        cpu = client_cpu()
        second = bare_parse(http, urls)
        second_cpu = seconds_of(cpu, None)[0]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    bare_rate = (first[0] / first[1] + second[0] / second[1]) / 2
    rows.append(("bare mwxml parse (before)", f"{first[0]:,}", f"{first[1]:.1f}", f"{first[0] / first[1]:,.0f}",
                 first_cpu, "-", "100 %"))
    for label, n, seconds, cpu_s, server_s in runs:
        rows.append((label, f"{n:,}", f"{seconds:.1f}", f"{n / seconds:,.0f}",
                     cpu_s, server_s, f"{n / seconds / bare_rate:.0%}"))
    rows.append(("bare mwxml parse (after)", f"{second[0]:,}", f"{second[1]:.1f}", f"{second[0] / second[1]:,.0f}",
                 second_cpu, "-", "100 %"))
    ingested = next(run for run in runs if run[0].endswith(", metadata"))
    ratio = ingested[1] / ingested[2] / bare_rate
    print(heading(11, "Dump ingest: revisions/s from XML dumps into Cassandra"))
    print(f"The Chamorro Wikipedia full-history dump ({first[0]:,} revisions) in {args.parts} bzip2 files "
          f"({size / 1e6:.1f} MB) streamed from the local nginx edge; a throwaway keyspace (replication 1).\n")
    print(table(("path", "revisions", "seconds", "revisions/s", "client CPU s", "Cassandra CPU s", "of bare parse"),
                rows, right=(1, 2, 3, 4, 5, 6)))
    print(f"\nGoal ≥ {GOAL:.0%} of the bare mwxml parse (metadata ingest): {ratio:.0%} — {verdict(ratio >= GOAL)}")


if __name__ == "__main__":
    main()
