"""Content storage: bytes per revision of history-native texts (shared/revisions/text_history.py) against
raw wikitext and against the previous store (one zlib blob per revision), on real histories and the seeded
wiki; then, on the local Cassandra, write throughput of both stores and the time to read one random
revision's text; and the writer's rate on the 3-node cluster (RF 3) against the single node, when
`scripts/services/cassandra.sh up-cluster` can start it.

    .venv/bin/python -m bench.content_storage [--no-ring]
"""
import argparse
import dataclasses
import json
import lzma
import random
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from bench.common import RING, ROOT, cassandra_keyspace, cassandra_ring, heading, table, timer, verdict
from shared.revisions.model import Revision
from shared.revisions.text_history import TextInput, digest, plan_texts

DATA = ROOT.parent / "shared" / "data"
BATCH = 50                   # revisions per write, as a harvest writes them
READS = 500
GOAL_RATIO, GOAL_P99_MS = 10.0, 50.0


# -- histories: (page id, [(rev_id, text)] oldest first) -----------------------------------------------

def crispr_jsonl() -> Iterator[tuple[int, list[tuple[int, str]]]]:
    rows = [json.loads(line) for line in lzma.open(DATA / "enwiki-CRISPR-history-1982revs.jsonl.xz", "rt")]
    yield 1, sorted((r["revid"], r["text"]) for r in rows if r.get("text") is not None)


def export_xml(stream) -> Iterator[tuple[int, list[tuple[int, str]]]]:
    """Pages of a MediaWiki export (any schema version): (page id, [(rev id, text)]) in file order."""
    stack: list[str] = []
    page_id, rev_id = 0, 0
    revisions: list[tuple[int, str]] = []
    for event, el in ET.iterparse(stream, events=("start", "end")):
        tag = el.tag.rsplit("}", 1)[-1]
        if event == "start":
            stack.append(tag)
            if tag == "page":
                page_id, revisions = 0, []
            continue
        stack.pop()
        parent = stack[-1] if stack else ""
        if tag == "id" and parent == "page":
            page_id = int(el.text)
        elif tag == "id" and parent == "revision":
            rev_id = int(el.text)
        elif tag == "text" and parent == "revision" and el.text is not None:
            revisions.append((rev_id, el.text))
        elif tag == "page":
            yield page_id, sorted(revisions)
            el.clear()


def crispr_xml() -> Iterator[tuple[int, list[tuple[int, str]]]]:
    yield from export_xml(lzma.open(DATA / "enwiki-CRISPR-SpecialExport-1000revs.xml.xz"))


def chamorro() -> Iterator[tuple[int, list[tuple[int, str]]]]:
    import py7zr
    with tempfile.TemporaryDirectory() as tmp:
        with py7zr.SevenZipFile(DATA / "chwiki-latest-pages-meta-history.xml.7z") as archive:
            archive.extractall(path=tmp)
        (xml,) = Path(tmp).rglob("*.xml")
        with open(xml, "rb") as f:
            yield from export_xml(f)


def seeded() -> Iterator[tuple[int, list[tuple[int, str]]]]:
    from tools.wikigen import generate
    for i, page in enumerate(generate().pages, start=1):
        if not page.is_redirect:
            yield i, [(i * 100_000 + k, rev.text or "") for k, rev in enumerate(page.revisions)]


DATASETS = (("enwiki CRISPR, 1,982 revisions (API)", crispr_jsonl),
            ("enwiki CRISPR, 1,000 revisions (Special:Export)", crispr_xml),
            ("Chamorro Wikipedia, full-history dump", chamorro),
            ("seeded test wiki", seeded))


# -- sizes -------------------------------------------------------------------------------------------

def sizes(pages) -> dict:
    raw = zl = stored = revisions = repeats = 0
    for _, history in pages:
        known: dict[str, tuple[int, int]] = {}
        group = None
        seen = set()
        for i in range(0, len(history), BATCH):
            batch = history[i:i + BATCH]
            plan = plan_texts([TextInput(r, t) for r, t in batch], known, group)
            known.update(plan.new_digests)
            group = plan.group
            stored += plan.body_bytes
            for _, text in batch:
                data = text.encode("utf-8")
                raw += len(data)
                zl += len(zlib.compress(data, 6))
                revisions += 1
                h = digest(text)
                repeats += h in seen
                seen.add(h)
    return {"revisions": revisions, "raw": raw, "zlib": zl, "stored": stored, "repeats": repeats}


# -- Cassandra: writes and reads ------------------------------------------------------------------------

LEGACY_TABLE = ("CREATE TABLE IF NOT EXISTS {ks}.revision_content (wiki text, rev_id bigint, page_id bigint, "
                "content_model text, codec text, body blob, sha1 text, PRIMARY KEY ((wiki, rev_id))) "
                "WITH compression = {{'enabled': 'false'}}")


class ZlibPerRevision:
    """The previous store's text writing, for comparison: one zlib blob per revision."""

    def __init__(self, session, keyspace: str):
        session.execute(LEGACY_TABLE.format(ks=keyspace))
        self._insert = session.prepare(f"INSERT INTO {keyspace}.revision_content (wiki, rev_id, page_id, "
                                       "content_model, codec, body, sha1) VALUES (?, ?, ?, ?, ?, ?, ?)")
        self._select = session.prepare(f"SELECT body FROM {keyspace}.revision_content WHERE wiki = ? AND rev_id = ?")
        self._session = session

    def prepare(self, wiki, page_id, revisions):
        return [], [(self._insert, (wiki, r.rev_id, page_id, r.content_model, "zlib",
                                    zlib.compress(r.content.encode("utf-8"), 6), r.sha1))
                    for r in revisions if r.content is not None]

    def forget(self, wiki, page_id):
        pass

    def content(self, wiki, rev_id):
        return zlib.decompress(self._session.execute(self._select, (wiki, rev_id)).one().body).decode("utf-8")


def as_revisions(wiki: str, page_id: int, history: list[tuple[int, str]]) -> list[Revision]:
    start = datetime(2005, 1, 1, tzinfo=timezone.utc).timestamp()
    out, parent = [], 0
    for i, (rev_id, text) in enumerate(history):
        out.append(Revision(wiki=wiki, page_id=page_id, ns=0, title="CRISPR", rev_id=rev_id, parent_id=parent,
                            timestamp=datetime.fromtimestamp(start + i * 86_400 * 2, timezone.utc), user="Editor",
                            user_id=1, anon=False, minor=False, size=len(text.encode()), sha1=digest(text),
                            comment="", content_model="wikitext", content=text))
        parent = rev_id
    return out


def write_rate(store, revisions: list[Revision]) -> float:
    with timer() as t:
        for i in range(0, len(revisions), BATCH):
            store.write(revisions[i:i + BATCH])
    return len(revisions) / t[0]


def read_times(read, revisions: list[Revision]) -> list[float]:
    rng = random.Random(7)
    out = []
    for r in rng.sample(revisions, min(READS, len(revisions))):
        started = time.perf_counter()
        text = read(r.wiki, r.rev_id)
        out.append((time.perf_counter() - started) * 1000)
        assert text == r.content, f"revision {r.rev_id} read back differently"
    return sorted(out)


def percentile(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def cassandra_runs(revisions: list[Revision]) -> list[tuple]:
    from shared.revisions.cassandra_store import CassandraRevisionStore
    rows = []
    with cassandra_keyspace("bench_content") as (session, keyspace):
        for name in ("zlib per revision (previous)", "history-native"):
            store = CassandraRevisionStore(session, keyspace)
            wiki = f"{name.split()[0]}.bench"
            if name.startswith("zlib"):
                legacy = ZlibPerRevision(session, keyspace)
                store._texts = legacy               # type: ignore[assignment]  # same two methods
                read = legacy.content
            else:
                read = store.content
            batch = [dataclasses.replace(r, wiki=wiki) for r in revisions]
            rate = write_rate(store, batch)
            times = read_times(read, batch)
            rows.append((name, len(batch), f"{rate:,.0f}", f"{percentile(times, 50):.1f}",
                         f"{percentile(times, 99):.1f}", f"{times[-1]:.1f}"))
    return rows


def ring_rate(revisions: list[Revision]) -> float | None:
    """Writer rate on the 3-node cluster at RF 3 (started here and stopped after), or None."""
    from shared.revisions.cassandra_store import CassandraRevisionStore
    with cassandra_ring() as up:
        if not up:
            return None
        with cassandra_keyspace("bench_ring", RING.hosts, port=RING.port, replication=3) as (session, keyspace):
            return write_rate(CassandraRevisionStore(session, keyspace),
                              [dataclasses.replace(r, wiki="ring.bench") for r in revisions])


def single_rate(revisions: list[Revision]) -> float:
    from shared.revisions.cassandra_store import CassandraRevisionStore
    with cassandra_keyspace("bench_single") as (session, keyspace):
        return write_rate(CassandraRevisionStore(session, keyspace),
                          [dataclasses.replace(r, wiki="single.bench") for r in revisions])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-ring", action="store_true", help="skip the 3-node cluster")
    args = parser.parse_args()
    rows, overall = [], {"raw": 0, "stored": 0}
    for name, load in DATASETS:
        s = sizes(load())
        overall["raw"] += s["raw"]
        overall["stored"] += s["stored"]
        rows.append((name, f"{s['revisions']:,}", f"{s['raw'] / 1e6:,.1f}", f"{s['zlib'] / 1e6:,.1f}",
                     f"{s['stored'] / 1e6:,.2f}", f"{s['raw'] / s['revisions'] / 1024:,.1f}",
                     f"{s['stored'] / s['revisions'] / 1024:,.2f}", f"{s['raw'] / s['stored']:.1f}x",
                     f"{s['zlib'] / s['stored']:.1f}x", f"{100 * s['repeats'] / s['revisions']:.0f} %"))
    crispr = next(crispr_jsonl())[1]
    revisions = as_revisions("bench", 1, crispr)
    runs = cassandra_runs(revisions)
    single = single_rate(revisions)
    ring = None if args.no_ring else ring_rate(revisions)

    worst = min(float(r[7].rstrip("x")) for r in rows[:3])
    p99 = float(runs[1][4])
    print(heading(9, "Content storage: history-native texts against zlib per revision"))
    print("Bodies stored for every revision's wikitext when each page's history is written oldest first in "
          f"batches of {BATCH} (as a harvest writes it): raw UTF-8, the previous store's one zlib blob per "
          "revision, and the history-native layout (sha1 dedup within the page, zstd frames against a "
          "per-group dictionary, a new group every 32 texts or when a text stops fitting). Body bytes "
          "only: the per-revision pointer row (ids and a sha1, under 100 bytes) is not counted.\n")
    print(table(("history", "revisions", "raw MB", "zlib MB", "stored MB", "raw KiB/rev", "stored KiB/rev",
                 "vs raw", "vs zlib", "exact repeats"), rows, right=range(1, 10)))
    print(f"\nGoal ≥ {GOAL_RATIO:.0f}x smaller than raw on the real histories: worst {worst:.1f}x — "
          f"{verdict(worst >= GOAL_RATIO)}")
    print(f"\nOn the local Cassandra (one node, RF 1): the CRISPR history ({len(revisions):,} revisions) "
          f"written in batches of {BATCH} through CassandraRevisionStore.write with each text layout, then "
          f"{READS} random revisions read back one at a time (each checked against its text).\n")
    print(table(("text layout", "revisions", "written/s", "read p50 ms", "read p99 ms", "read max ms"), runs,
                right=range(1, 6)))
    print(f"\nGoal p99 ≤ {GOAL_P99_MS:.0f} ms to read one random revision's text: {p99:.1f} ms — "
          f"{verdict(p99 <= GOAL_P99_MS)}")
    if ring is None:
        print("\n3-node cluster: not measured (`--no-ring`, or `cassandra.sh up-cluster` failed).")
    else:
        print(f"\nWriter on the 3-node cluster (127.0.0.2-4, RF 3, LOCAL_QUORUM, 512 MiB heaps on the same 2 "
              f"cores) against the single node (RF 1), same history: {ring:,.0f} against {single:,.0f} "
              f"revisions/s ({ring / single:.2f}x).")


if __name__ == "__main__":
    main()
