"""Dump ingest against real data over the local edge: the complete Chamorro Wikipedia full-history dump
(../shared/data, 2,293 pages, 13,598 revisions) published under .run/nginx/files/ as published (plain XML once
unpacked from its 7z) and re-split by page range into 4 files, gzip and bzip2. Every stored revision is checked
against an independent reading of the XML (ElementTree, sha1 recomputed from the text), field by field."""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from shared.revisions.sqlite_store import SQLiteRevisionStore
from spawn.dump_ingest import Checkpoint, DumpIngest
from spawn.dump_rows import (DumpCorrupt, DumpNotFound, DumpSchemaUnknown, DumpStalled, DumpWrongWiki,
                             ExpectedSite)
from tests.support.dumps import X, assert_stored, truth

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
WIKI = "ch.wikipedia.org"
CHWIKI = ExpectedSite(dbname="chwiki", host=WIKI)
REVISIONS, PAGES, PARTS = 13_598, 2_293, 4


@pytest.fixture(scope="module")
def published(edge, chwiki):
    """{name: URL} of the dump as published and re-split, under a directory of the edge's files/."""
    source, expected = chwiki.path, chwiki.truth
    folder = f"dumps-{uuid.uuid4().hex[:8]}"
    target = edge.files_dir / folder
    target.mkdir(parents=True)
    shutil.copyfile(source, target / source.name)
    names = {"published": source.name}
    parts = chwiki.parts(PARTS)
    for i, part in enumerate(parts, 1):
        raw = part.encode("utf-8")
        for kind, compress in (("gz", gzip.compress), ("bz2", bz2.compress)):
            name = f"chwiki-pages-meta-history{i}.xml.{kind}"
            (target / name).write_bytes(compress(raw))
            names[f"{kind}{i}"] = name
    (target / "truncated2.xml.gz").write_bytes((target / names["gz2"]).read_bytes()[:200_000])
    corrupt = bytearray((target / names["bz22"]).read_bytes())
    corrupt[300_000:300_064] = bytes(64)
    (target / "corrupt2.xml.bz2").write_bytes(bytes(corrupt))
    (target / "schema.xml").write_text(parts[0].replace('version="0.10"', 'version="0.42"', 1))
    urls = {k: f"{edge.files_url}{folder}/{v}" for k, v in names.items()}
    for extra in ("truncated2.xml.gz", "corrupt2.xml.bz2", "schema.xml"):
        urls[extra] = f"{edge.files_url}{folder}/{extra}"
    urls["missing"] = f"{edge.files_url}{folder}/absent.xml.gz"
    yield {"urls": urls, "truth": expected, "dir": target}
    shutil.rmtree(target, ignore_errors=True)


def assert_equal(store, expected: dict[int, dict[str, Any]], *, content: bool) -> None:
    assert_stored(store, WIKI, expected, content=content)


def ingest(urls, store, checkpoint: Path, edge, **kw) -> DumpIngest:
    kw.setdefault("expected", CHWIKI)
    return DumpIngest(urls, wiki=kw.pop("wiki", WIKI), store=store, checkpoint=Checkpoint(checkpoint),
                      http=edge.session(), **kw)


def test_published_dump_into_cassandra_with_content(published, store, edge, tmp_path):
    assert len(published["truth"]) == REVISIONS
    run = ingest([published["urls"]["published"]], store, tmp_path / "cp.json", edge, content=True)
    assert run.run()
    totals = run.progress.totals()
    assert (totals["revisions_read"], totals["revisions_written"]) == (REVISIONS, REVISIONS)
    assert totals["bytes_read"] == totals["bytes_total"] == (published["dir"] / Path(
        published["urls"]["published"]).name).stat().st_size
    assert_equal(store, published["truth"], content=True)


@pytest.mark.parametrize("kind", ["gz", "bz2"])
def test_split_dump_into_sqlite(published, edge, tmp_path, kind):
    store = SQLiteRevisionStore(str(tmp_path / "r.db"))
    try:
        urls = [published["urls"][f"{kind}{i}"] for i in range(1, PARTS + 1)]
        run = ingest(urls, store, tmp_path / "cp.json", edge, content=kind == "gz")
        assert run.run()
        assert [f.state for f in run.progress.files] == ["done"] * PARTS
        assert sum(f.pages_written for f in run.progress.files) == PAGES
        assert_equal(store, published["truth"], content=kind == "gz")
    finally:
        store.close()


def test_kill_in_the_middle_and_resume(published, edge, tmp_path):
    """A real process, reading two files at once (the command line's default), killed with SIGKILL during the second
    file (groups of 100 revisions, so that the kill lands mid-file); the restart writes only the pages after each
    file's checkpoint and the store ends equal to the dump."""
    urls = [published["urls"][f"bz2{i}"] for i in range(1, PARTS + 1)]
    db, cp = tmp_path / "r.db", tmp_path / "cp.json"
    log = tmp_path / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "spawn.dump_ingest", "--wiki", WIKI, "--checkpoint", str(cp),
                                 "--sqlite", str(db), "--dbname", "chwiki", "--checkpoint-every", "0", "--batch", "100",
                                 "--user-agent", edge.user_agent, *urls], cwd=ROOT, stderr=err)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if cp.exists() and Checkpoint(cp).of(urls[1]).pages > 50:
                break
            time.sleep(0.02)
        assert proc.poll() is None, log.read_text()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    saved = Checkpoint(cp)
    assert not saved.of(urls[1]).done
    store = SQLiteRevisionStore(str(db))
    try:
        before = len(list(store.revisions(WIKI)))
        resumed = ingest(urls, store, cp, edge)
        assert resumed.run()
        # what the restart must write: the pages of each file after its checkpointed ones (none of a file done)
        truth = published["truth"]
        pages_by_file = [[int(m) for m in _page_ids(published["dir"] / Path(u).name)] for u in urls]
        rest = {page for ids, u in zip(pages_by_file, urls) if not saved.of(u).done for page in ids[saved.of(u).pages:]}
        # less the revisions written of a long page begun (a group of 100 is a part of a longer page)
        owed = sum(1 for r in truth.values() if r["page_id"] in rest) - sum(saved.of(u).part_revisions for u in urls)
        assert [f.bytes_read == 0 for f in resumed.progress.files] == [saved.of(u).done for u in urls]
        assert resumed.progress.totals()["revisions_written"] == owed
        assert before >= REVISIONS - owed
        assert_equal(store, truth, content=False)
    finally:
        store.close()


CRISPR_XZ = ROOT.parent / "shared" / "data" / "enwiki-CRISPR-SpecialExport-1000revs.xml.xz"


@pytest.fixture
def crispr(edge):
    """The real en.wikipedia "CRISPR" export (one page, its first 1,000 revisions with their texts, 79 MB) as
    bzip2 on the edge: (its URL, the revisions it holds)."""
    folder = edge.files_dir / f"crispr-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    plain = folder / "crispr.xml"
    plain.write_bytes(lzma.open(CRISPR_XZ).read())
    (folder / "crispr.xml.bz2").write_bytes(bz2.compress(plain.read_bytes()))
    yield f"{edge.files_url}{folder.name}/crispr.xml.bz2", truth(plain)
    shutil.rmtree(folder, ignore_errors=True)


def test_a_long_page_killed_in_the_middle_resumes_after_its_written_parts(crispr, edge, tmp_path):
    """A real process ingesting one long real history with its texts, in parts of 50 revisions, killed with SIGKILL
    in the middle of the page: the restart writes only the revisions after the checkpoint's part, and the store
    ends equal to the export, text by text."""
    url, expected = crispr
    db, cp = tmp_path / "r.db", tmp_path / "cp.json"
    log = tmp_path / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "spawn.dump_ingest", "--wiki", "en.wikipedia.org",
                                 "--checkpoint", str(cp), "--sqlite", str(db), "--dbname", "enwiki",
                                 "--checkpoint-every", "0", "--batch", "50", "--content",
                                 "--user-agent", edge.user_agent, url], cwd=ROOT, stderr=err)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if cp.exists() and Checkpoint(cp).of(url).part_revisions >= 200:
                break
            time.sleep(0.02)
        assert proc.poll() is None, log.read_text()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    saved = Checkpoint(cp).of(url)
    page_id = {r["page_id"] for r in expected.values()}
    assert (saved.done, saved.pages, {saved.part_page_id}) == (False, 0, page_id)
    assert saved.part_revisions % 50 == 0 and 200 <= saved.part_revisions < len(expected)
    store = SQLiteRevisionStore(str(db))
    try:
        resumed = ingest([url], store, cp, edge, wiki="en.wikipedia.org", content=True, batch=50,
                         expected=ExpectedSite(dbname="enwiki", host="en.wikipedia.org"))
        assert resumed.run()
        assert resumed.progress.totals()["revisions_written"] == len(expected) - saved.part_revisions
        assert_stored(store, "en.wikipedia.org", expected, content=True)
    finally:
        store.close()


def _page_ids(path: Path) -> list[str]:
    with bz2.open(path, "rt", encoding="utf-8") as f:
        return [el.findtext(X + "id") for _, el in ET.iterparse(f) if el.tag == X + "page"]  # type: ignore


def test_bad_dumps_fail_clearly_and_keep_what_was_written(published, edge, tmp_path):
    urls = published["urls"]
    store = SQLiteRevisionStore(str(tmp_path / "r.db"))
    try:
        with pytest.raises(DumpNotFound, match="404"):
            ingest([urls["missing"]], store, tmp_path / "a.json", edge).run()

        run = ingest([urls["gz1"], urls["truncated2.xml.gz"]], store, tmp_path / "b.json", edge,
                     checkpoint_every=0.0, batch=100)
        with pytest.raises(DumpCorrupt, match="truncated"):
            run.run()
        first = {int(p) for p in _gz_page_ids(published["dir"] / Path(urls["gz1"]).name)}
        kept = {r.page_id for r in store.revisions(WIKI)}
        cp = Checkpoint(tmp_path / "b.json")
        assert cp.of(urls["gz1"]).done and cp.of(urls["truncated2.xml.gz"]).pages > 0
        assert first < kept
        assert [f.state for f in run.progress.files] == ["done", "failed"]

        with pytest.raises(DumpCorrupt):
            ingest([urls["corrupt2.xml.bz2"]], store, tmp_path / "c.json", edge).run()
        with pytest.raises(DumpSchemaUnknown, match="0.42"):
            ingest([urls["schema.xml"]], store, tmp_path / "d.json", edge).run()
        with pytest.raises(DumpWrongWiki, match="enwiki"):
            DumpIngest([urls["gz1"]], wiki=WIKI, store=store, checkpoint=Checkpoint(tmp_path / "e.json"),
                       http=edge.session(), expected=ExpectedSite(dbname="enwiki")).run()
        assert {r.page_id for r in store.revisions(WIKI)} >= kept
    finally:
        store.close()


def _gz_page_ids(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [el.findtext(X + "id") for _, el in ET.iterparse(f) if el.tag == X + "page"]  # type: ignore


@pytest.fixture
def stalling_server():
    """A real HTTP server that sends the headers and the first bytes of a gzip body, then goes silent."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    body = gzip.compress(b'<mediawiki version="0.10"><!-- ' + os.urandom(50_000).hex().encode() + b" --></mediawiki>")
    done = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:1000])
        done.wait(30)
        conn.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/stall.xml.gz"
    done.set()
    thread.join(5)
    listener.close()


def test_stalled_connection_times_out(stalling_server, edge, tmp_path):
    store = SQLiteRevisionStore(str(tmp_path / "r.db"))
    try:
        started = time.monotonic()
        with pytest.raises(DumpStalled):
            ingest([stalling_server], store, tmp_path / "cp.json", edge, timeout=(2.0, 1.0)).run()
        assert time.monotonic() - started < 10
    finally:
        store.close()


def test_rewriting_pages_into_cassandra_changes_nothing(published, store, edge, tmp_path):
    """What a resume does to the pages after the last checkpoint, done to a whole file: the rows and the
    pages' revision counts stay as they were (writes are idempotent by rev id)."""
    url = published["urls"]["bz21"]
    for attempt in range(2):
        run = ingest([url], store, tmp_path / f"cp{attempt}.json", edge)
        assert run.run()
    ids = {int(p) for p in _page_ids(published["dir"] / Path(url).name)}
    expected = {rev_id: row for rev_id, row in published["truth"].items() if row["page_id"] in ids}
    assert_equal(store, expected, content=False)
    per_page: dict[int, int] = {}
    for row in expected.values():
        per_page[row["page_id"]] = per_page.get(row["page_id"], 0) + 1
    assert {p: store.page(WIKI, p).revisions for p in per_page} == per_page
