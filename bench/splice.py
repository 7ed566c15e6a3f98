"""15. A whole wiki from its dump, then caught up through the API: gaps and duplicates at the splice, with a spawn
killed at a random moment of each run.

Each run: a few edits on the writable wiki, the wiki dumped with MediaWiki's own dumpBackup.php --full (served by
the local nginx edge) with its date, then an edit and a new page after the dump; a hub on PostgreSQL and two spawns
on a fresh Cassandra keyspace; a `kind: wiki` set from the dump, caught up through the edge's API. One spawn is
killed (SIGKILL) at a moment drawn uniformly over the time the first run took to reach `following`, and restarted
right away. When the set follows, the store is compared with what the wiki's API lists:

- a gap is a revision the API lists and the store lacks; an extra is one stored the API does not list;
- a duplicate is a page whose stored revision count differs from its distinct stored revisions (rows are keyed
  by revision id, so a revision written twice shows only in the counts).

Then the set's own census (docs/dumps.md, "The census") runs, as it does once a set is caught up: whether it
proved every page-id shard, what it repaired and the requests it spent.

Also, from the same runs, the time to `following`. The share of a wiki read through the API is measured where it
means something, on a real wiki's size: the Chamorro wiki (scripts/services/mediawiki-chwiki.sh: the real Chamorro
Wikipedia, 13,598 revisions, imported into a local MediaWiki and dumped again), an article edited, one created and
one moved after its dump, bootstrapped from that dump re-split into 4 gzip files and caught up the same way (no
kill). Beside it, the API-only paths, straight to the wiki with no pacing, their requests counted: the whole wiki
read by the set's own reader (spawn.catch_up, list=allrevisions) from before its first revision, without and with
content, and every page harvested from scratch by title through a spawn's own client (spawn.wikis, metadata), as
page subscriptions would. The time that many requests take at the anonymous identity's binding rate follows from
the count.

    .venv/bin/python -m bench.splice [--runs 20]

Not a test: numbers depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import gzip
import random
import shutil
import statistics
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from bench.common import USER_AGENT, cassandra_keyspace, heading, pg_database, table, verdict
from bench.requests_per_revision import spawn_requests
from bench.upstream_budget import the_edge
from blackwidow.upstream.limits import binding_rate, default_limits
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.dump_wire import CatchUpDuty
from shared.http import make_session
from shared.revisions.sqlite_store import SQLiteRevisionStore
from spawn.catch_up import CatchUpReader
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import MediaWikiClient
from tests.e2e.cluster import Cluster
from tests.fixtures import chwiki_wiki
from tests.fixtures.writable_wiki import API_URL, RUN_DIR, WritableWiki
from tests.support.dumps import api_truth, split_pages
from tests.support.processes import wait_for

RUNS = 20
CHWIKI_PARTS = 4


def api_revisions(wiki: WritableWiki) -> set[int]:
    http = wiki.session()
    ids: set[int] = set()
    params = {"action": "query", "list": "allrevisions", "arvlimit": "max", "arvprop": "ids", "format": "json",
              "formatversion": "2"}
    cont: dict = {}
    while True:
        body = http.get(wiki.api_url, params={**params, **cont}, timeout=30).json()
        ids.update(r["revid"] for page in body["query"]["allrevisions"] for r in page["revisions"])
        if "continue" not in body:
            return ids
        cont = body["continue"]


def stored(store: CassandraRevisionStore, wiki: str) -> tuple[set[int], int]:
    """(stored revision ids, pages whose stored count differs from their distinct stored revisions)."""
    by_page: dict[int, set[int]] = {}
    for r in store.revisions(wiki):
        by_page.setdefault(r.page_id, set()).add(r.rev_id)
    duplicated = 0
    for page_id, revs in by_page.items():
        state = store.page(wiki, page_id)
        if state is None or state.revisions != len(revs):
            duplicated += 1
    return {r for revs in by_page.values() for r in revs}, duplicated


def census_of(hub, path: str) -> dict:
    """The set's first census once it finished (docs/dumps.md, "The census"): its state and its last summary."""
    wait_for(lambda: (hub.get(path)["census"] or {}).get("last") is not None, 600, 0.2, "the set's census")
    return hub.get(path)["census"]


def census_fields(census: dict) -> dict:
    last = census["last"]
    return {"census": census["state"], "census_requests": last["requests"], "census_repaired": last["repaired"],
            "census_shards": f"{last['proven_shards']} / {last['shards']}", "census_extra": last["extra"]}


def one_run(index: int, wiki: WritableWiki, edge, work: Path, kill_at: float | None) -> dict:
    admin = wiki.admin()
    title = wiki.unique_title(f"Splice {index}")
    for i in range(3):
        admin.edit(title, f"before the dump {i}")
    dumped_at = datetime.now(timezone.utc).replace(microsecond=0)
    time.sleep(1.1)
    folder = edge.files_dir / f"splice-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    (folder / "full.xml.gz").write_bytes(gzip.compress(wiki.dump_full()))
    admin.edit(title, "after the dump")
    admin.edit(wiki.unique_title(f"Splice new {index}"), "made after the dump")
    hosts = f"{urlsplit(edge.writable_api_url).netloc},{urlsplit(edge.files_url).netloc}"
    wiki_host = urlsplit(edge.writable_api_url).netloc
    run_dir = work / f"run-{index}"
    run_dir.mkdir()
    try:
        with pg_database("bench_splice") as database_url, cassandra_keyspace("bench_splice") as (session, keyspace):
            cluster = Cluster(run_dir, database_url=database_url, keyspace=keyspace, user_agent=USER_AGENT,
                              allowlist=hosts).start(spawns=2)
            try:
                tenant = cluster.tenant("splice")
                created = cluster.hub.post("/v1/subscriptions", {
                    "kind": "wiki", "tenant_id": tenant["id"], "wiki": edge.writable_api_url,
                    "dumps": [f"{edge.files_url}{folder.name}/full.xml.gz"], "dbname": "writable_wiki",
                    "dumped_at": dumped_at.isoformat()})
                path = f"/v1/sets/{created['id']}"
                started = time.monotonic()
                phase = "-"
                if kill_at is not None:
                    while time.monotonic() - started < kill_at and cluster.hub.get(path)["state"] != "following":
                        time.sleep(0.05)
                    phase = cluster.hub.get(path)["state"]
                    victim = random.choice(cluster.spawns)
                    victim.kill9()
                    victim.start()
                wait_for(lambda: cluster.hub.get(path)["state"] == "following", 300, 0.1, "the set following")
                took = time.monotonic() - started
                shown = cluster.hub.get(path)
                truth = api_revisions(wiki)
                ids, duplicated = stored(CassandraRevisionStore(session, keyspace), wiki_host)
                # then the set's own proof, after the comparison above: what it repairs is a gap the splice left
                census = census_fields(census_of(cluster.hub, path))
                return {"took": took, "phase": phase, "gaps": len(truth - ids), "extra": len(ids - truth),
                        "duplicated": duplicated, "revisions": len(truth),
                        "via_api": shown["catch_up"]["revisions_written"],
                        "via_dump": shown["progress"]["revisions_written"], **census}
            finally:
                cluster.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def chwiki_run(wiki: chwiki_wiki.ChwikiWiki, edge, work: Path) -> dict:
    """The Chamorro wiki from its dump through a hub and two spawns, caught up; then the API-only path's requests."""
    admin = wiki.admin()
    picked = admin.call(action="query", list="random", rnnamespace="0", rnfilterredir="nonredirects",
                        rnlimit="2")["query"]["random"]
    admin.edit(picked[0]["title"], "changed after the dump")
    admin.edit(wiki.unique_title("Splice new article"), "made after the dump")
    admin.move(picked[1]["title"], wiki.unique_title("Splice moved article"))
    folder = edge.files_dir / f"splice-chwiki-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    urls = []
    for i, part in enumerate(split_pages(wiki.dump.read_text(encoding="utf-8"), CHWIKI_PARTS), 1):
        (folder / f"part{i}.xml.gz").write_bytes(gzip.compress(part.encode("utf-8"), compresslevel=6))
        urls.append(f"{edge.files_url}{folder.name}/part{i}.xml.gz")
    wiki_host = urlsplit(wiki.api_url).netloc
    run_dir = work / "run-chwiki"
    run_dir.mkdir()
    try:
        with pg_database("bench_splice") as database_url, cassandra_keyspace("bench_splice") as (session, keyspace):
            cluster = Cluster(run_dir, database_url=database_url, keyspace=keyspace, user_agent=USER_AGENT,
                              allowlist=f"{wiki_host},{urlsplit(edge.files_url).netloc}").start(spawns=2)
            try:
                tenant = cluster.tenant("splice-chwiki")
                created = cluster.hub.post("/v1/subscriptions", {
                    "kind": "wiki", "tenant_id": tenant["id"], "wiki": wiki.api_url, "dumps": urls,
                    "dbname": chwiki_wiki.DBNAME, "dumped_at": wiki.dumped_at.isoformat()})
                path = f"/v1/sets/{created['id']}"
                started = time.monotonic()
                wait_for(lambda: cluster.hub.get(path)["state"] == "following", 900, 0.2, "the set following")
                took = time.monotonic() - started
                shown = cluster.hub.get(path)
                truth = api_truth(wiki)
                ids, duplicated = stored(CassandraRevisionStore(session, keyspace), wiki_host)
                census = census_fields(census_of(cluster.hub, path))
            finally:
                cluster.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    titles = sorted({fields["title"] for fields in truth.values()})
    api_only = {f"list=allrevisions from the first revision{' with content' if content else ''}":
                whole_wiki_by_api(wiki.api_url, content, work) for content in (False, True)}
    started = time.monotonic()
    harvested = spawn_requests(wiki.api_url, titles, content=False)
    api_only["page by page: a page subscription per title"] = (
        sum(r for r, _ in harvested.values()), sum(n for _, n in harvested.values()), time.monotonic() - started)
    return {"took": took, "revisions": len(truth), "gaps": len(set(truth) - ids), "extra": len(ids - set(truth)),
            "duplicated": duplicated, "via_api": shown["catch_up"]["revisions_written"],
            "api_requests": shown["catch_up"]["requests"], "via_dump": shown["progress"]["revisions_written"],
            "pages": len(titles), "api_only": api_only, **census}


def whole_wiki_by_api(api_url: str, content: bool, work: Path) -> tuple[int, int, float]:
    """(requests, revisions, seconds): the whole wiki read through its API with no dump, by the set's own reader
    (spawn.catch_up) from before the wiki's first revision, into a throwaway store, straight to the wiki."""
    store = SQLiteRevisionStore(str(work / f"api-only-{uuid.uuid4().hex[:8]}.db"))
    client = MediaWikiClient(make_session(USER_AGENT), api_url, limiter=HostLimiter(0.0), maxlag=5,
                             timeout=(5.0, 60.0))
    reader = CatchUpReader(CatchUpDuty(set_id="api-only", wiki=api_url, since="2001-01-01T00:00:00Z",
                                       content=content), client, store)
    started = time.monotonic()
    try:
        while reader.read_once():
            pass
    finally:
        store.close()
    report = reader.report()
    return report.requests, report.revisions, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    wiki = WritableWiki(API_URL, RUN_DIR)
    edge = the_edge()
    rng = random.Random(15)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-splice-") as tmp:
        work = Path(tmp)
        calibration = one_run(0, wiki, edge, work, None)
        for i in range(1, args.runs + 1):
            results.append(one_run(i, wiki, edge, work, rng.uniform(0, calibration["took"])))
        real = chwiki_run(chwiki_wiki.ChwikiWiki(chwiki_wiki.API_URL, chwiki_wiki.RUN_DIR), edge, work)
    gaps = sum(r["gaps"] + r["extra"] for r in results)
    proven = sum(r["census"] == "proven" for r in results)
    duplicated = sum(r["duplicated"] for r in results)
    phases = {p: sum(r["phase"] == p for r in results) for p in ("bootstrapping", "catching_up", "following")}
    share = real["via_api"] / real["revisions"]
    rate = binding_rate(default_limits("ch.wikipedia.org"))      # anonymous
    print(heading(15, "Whole wiki from its dump, caught up: gaps and duplicates at the splice"))
    print(f"The writable test wiki dumped with dumpBackup.php --full ({results[-1]['revisions']:,} revisions at the "
          f"last run), changed after the dump, bootstrapped through a hub and two spawns on Cassandra and caught "
          f"up through the local edge; {len(results)} runs, each with a spawn killed (SIGKILL) and restarted at a "
          f"random moment of the first {calibration['took']:.1f} s (a run without a kill took that long to "
          f"follow). The kills fell while the set was bootstrapping {phases['bootstrapping']} times, catching up "
          f"{phases['catching_up']} times, following {phases['following']} times.\n")
    print(table(["measure", "value"], [
        ["runs", str(len(results))],
        ["revisions missing or extra after the splice (all runs)", str(gaps)],
        ["pages counted twice (all runs)", str(duplicated)],
        ["time to following, median / worst (s)",
         f"{statistics.median(r['took'] for r in results):.1f} / {max(r['took'] for r in results):.1f}"],
        ["runs whose census then proved every shard", f"{proven} of {len(results)}"],
        ["revisions the censuses found missing and wrote, or stored and not on the wiki (all runs)",
         f"{sum(r['census_repaired'] for r in results)}, {sum(r['census_extra'] for r in results)}"],
        ["census requests per run, median (listing: 500 revision ids a request)",
         f"{statistics.median(r['census_requests'] for r in results):.0f}"],
    ], right=(1,)))
    print()
    print(f"The Chamorro wiki ({real['revisions']:,} revisions on {real['pages']:,} pages), side by side: its dump "
          f"through the hub then caught up, and the API-only path. *At the identity's rate*: the requests over the "
          f"anonymous binding rate ({rate:.2f} requests/s, docs/upstream.md), the least time they take against a "
          f"Wikimedia wiki; the dump's own reading costs no API request.\n")
    rows = [["dump through the hub, then caught up", f"{real['revisions']:,}", f"{real['via_api']:,}", f"{share:.2%}",
             f"{real['api_requests']:,}", f"{real['took']:.0f}", f"{real['api_requests'] / rate:.0f}",
             f"{real['gaps']}, {real['extra']}, {real['duplicated']}"]]
    rows += [[f"API only, {path}", f"{revisions:,}", f"{revisions:,}", "100 %", f"{requests:,}", f"{seconds:.0f}",
              f"{requests / rate:.0f}", "-"] for path, (requests, revisions, seconds) in real["api_only"].items()]
    print(table(["path", "revisions", "through the API", "share", "API requests", "time here (s)",
                 "at the identity's rate (s)", "missing, extra, pages counted twice"], rows, right=(1, 2, 3, 4, 5, 6)))
    print()
    print(f"Goal 0 gaps and 0 duplicates at the splice over {len(results)} runs with a kill: "
          f"{gaps + duplicated} — {verdict(gaps + duplicated == 0)}\n")
    print(f"Goal ≤ 1 % of revisions through the API (the Chamorro wiki): {share:.2%} — {verdict(share <= 0.01)}\n")
    print(f"The Chamorro wiki's census after its catch-up: {real['census']}, {real['census_shards']} shards proven, "
          f"{real['census_requests']} requests ({real['revisions'] / max(real['census_requests'], 1):,.0f} "
          f"revisions a request), {real['census_repaired']} revisions repaired, {real['census_extra']} extra.\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
