"""Dump ingest on small generated XML: the row rules as tables, resume after a crash, and the fault paths
(`responses` for HTTP; real gzip/bzip2 bytes for truncation and corruption)."""
from __future__ import annotations

import bz2
import gzip
import hashlib
import multiprocessing
import os
import re
import threading
import time
import zlib
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
import requests
import responses

from shared.revisions.sqlite_store import SQLiteRevisionStore
from shared.revisions.store import StoreError
from spawn.dump_ingest import Checkpoint, DumpIngest, DumpProgress, FileCheckpoint, FileProgress, eta
from spawn.dump_rows import (DumpCorrupt, DumpError, DumpNotFound, DumpSchemaUnknown, DumpStalled, DumpWrongWiki,
                             ExpectedSite, check_schema, check_site, dump_size, sha1_hex, user_name)
from spawn import dump_ingest, dump_stream
from spawn.dump_parse import WalkSpec, walk_here
from spawn.dump_stream import compression
from tests.support.processes import wait_for

WIKI = "gen.example.org"


def b36(text: str) -> str:
    n = int(hashlib.sha1(text.encode()).hexdigest(), 16)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out.rjust(31, "0")


def revision_xml(rev_id: int, parent: int, *, text: str = "", ip: bool = False, hidden: str = "",
                 minor: bool = False) -> str:
    who = ("<contributor deleted=\"deleted\" />" if "user" in hidden else
           "<contributor><ip>10.0.0.1</ip></contributor>" if ip else
           f"<contributor><username>U{rev_id}</username><id>{rev_id + 1000}</id></contributor>")
    comment = "<comment deleted=\"deleted\" />" if "comment" in hidden else f"<comment>c{rev_id}</comment>"
    if "text" in hidden:
        body, sha1 = '<text bytes="-1" deleted="deleted" />', "<sha1 />"
    else:
        body = f'<text bytes="{len(text.encode())}" sha1="{b36(text)}" xml:space="preserve">{text}</text>'
        sha1 = f"<sha1>{b36(text)}</sha1>"
    return (f"<revision><id>{rev_id}</id>" + (f"<parentid>{parent}</parentid>" if parent else "") +
            f"<timestamp>2020-01-0{1 + rev_id % 9}T10:00:{rev_id % 60:02d}Z</timestamp>{who}"
            + ("<minor />" if minor else "") + f"{comment}<model>wikitext</model><format>text/x-wiki</format>"
            f"{body}{sha1}</revision>")


def page_xml(page_id: int, revisions: int) -> str:
    revs = "".join(revision_xml(page_id * 100 + i, page_id * 100 + i - 1 if i else 0, text=f"text {page_id} {i}")
                   for i in range(revisions))
    return f"<page><title>P{page_id}</title><ns>0</ns><id>{page_id}</id>{revs}</page>"


def dump_xml(pages: str, *, version: str = "0.11", dbname: str = "genwiki") -> str:
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-{version}/" version="{version}" xml:lang="en">'
            f"<siteinfo><sitename>Gen</sitename><dbname>{dbname}</dbname>"
            "<base>https://gen.example.org/wiki/Main_Page</base><generator>MediaWiki 1.39</generator>"
            '<case>first-letter</case><namespaces><namespace key="0" case="first-letter" /></namespaces>'
            f"</siteinfo>{pages}</mediawiki>")


def pages(first: int, count: int, revisions: int = 3) -> str:
    return "".join(page_xml(p, revisions) for p in range(first, first + count))


@pytest.fixture
def store(tmp_path):
    s = SQLiteRevisionStore(str(tmp_path / "r.db"))
    yield s
    s.close()


def ingest(sources, store, tmp_path, **kw) -> DumpIngest:
    return DumpIngest([str(s) for s in sources], wiki=WIKI, store=store, checkpoint=Checkpoint(tmp_path / "cp.json"),
                      http=requests.Session(), **kw)


# the file walked in this process, or in a child process that opens it with a session of its own
both_walks = pytest.mark.parametrize("walk", [None, requests.Session], ids=["here", "child"])


def failing_session() -> requests.Session:
    raise ValueError("no session today")


def dying_session() -> requests.Session:
    os._exit(3)


def walk_processes() -> list:
    return [p for p in multiprocessing.active_children() if p.name == "dump-walk"]


@pytest.mark.parametrize("factory, error", [
    (failing_session, "ChildFailed: .*ValueError: no session today"),
    (dying_session, "ChildFailed: .*process ended with code 3"),
])
def test_a_walk_process_that_fails_or_dies_is_a_named_failure_of_its_file(tmp_path, store, factory, error):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(pages(1, 3)))
    run = ingest([path], store, tmp_path, session_factory=factory)
    with pytest.raises(DumpError):
        run.run()
    assert run.progress.files[0].state == "failed"
    assert re.match(error, run.progress.files[0].error or "", re.S)
    assert walk_processes() == [] and list(store.revisions(WIKI)) == []


def test_a_walk_left_early_ends_its_process_and_a_finished_one_leaves_none(tmp_path, store):
    path = tmp_path / "d.xml.bz2"
    path.write_bytes(bz2.compress(dump_xml(pages(1, 3000)).encode(), 1))
    stop = threading.Event()
    stopping = CrashingStore(store, allowed=-1)
    original = stopping.write_pages
    stopping.write_pages = lambda pages: (stop.set(), original(pages))  # type: ignore[method-assign]
    run = ingest([path], stopping, tmp_path, stop=stop, batch=30, session_factory=requests.Session)
    assert run.run() is False and run.progress.files[0].revisions_read < 9000
    assert walk_processes() == []
    resumed = ingest([path], store, tmp_path, session_factory=requests.Session)
    assert resumed.run() and walk_processes() == []
    assert len(list(store.revisions(WIKI))) == 9000
    assert resumed.progress.files[0].bytes_read == path.stat().st_size


@pytest.mark.parametrize("version, ok", [("0.3", True), ("0.10", True), ("0.11", True), ("0.12", False),
                                         (None, False), ("1.0", False)])
def test_schema_versions(version, ok):
    if ok:
        check_schema(version)
    else:
        with pytest.raises(DumpSchemaUnknown):
            check_schema(version)


@pytest.mark.parametrize("dbname, base, expected, ok", [
    ("chwiki", "https://ch.wikipedia.org/wiki/X", ExpectedSite("chwiki", "ch.wikipedia.org"), True),
    ("chwiki", "https://ch.wikipedia.org/wiki/X", ExpectedSite(), True),
    ("enwiki", "https://ch.wikipedia.org/wiki/X", ExpectedSite("chwiki"), False),
    ("chwiki", "https://en.wikipedia.org/wiki/X", ExpectedSite(host="ch.wikipedia.org"), False),
    (None, None, ExpectedSite("chwiki"), False),
])
def test_site_check(dbname, base, expected, ok):
    if ok:
        check_site(dbname, base, expected)
    else:
        with pytest.raises(DumpWrongWiki):
            check_site(dbname, base, expected)


@pytest.mark.parametrize("base36, hexa", [
    ("phoiac9h4m842xq45sp7s6u21eteeq1", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),   # sha1 of ""
    (None, None), ("", None)])
def test_sha1_base36_to_hex(base36, hexa):
    assert sha1_hex(base36) == hexa


@pytest.mark.parametrize("name, kind", [("a.xml", "plain"), ("a.xml.gz", "gzip"), ("a.xml.bz2", "bzip2"),
                                        ("http://h/a.XML.BZ2?x=1", "bzip2")])
def test_compression_by_name(name, kind):
    assert compression(name) == kind


@pytest.mark.parametrize("declared, text, hidden, size", [
    ("12", "ignored", False, 12), ("-1", None, True, 0), (None, "héllo", False, 6), (None, None, True, 0),
    (None, "", False, 0)])
def test_dump_size(declared, text, hidden, size):
    assert dump_size(declared, text, hidden) == size


@pytest.mark.parametrize("user_id, text, name", [
    (0, "None", ""), (7, "None", "None"), (None, "10.0.0.1", "10.0.0.1"), (0, None, ""), (3, "Ann", "Ann")])
def test_user_name(user_id, text, name):
    assert user_name(user_id, text) == name


@pytest.mark.parametrize("left, rate, expected", [(100, 10.0, 10.0), (0, 5.0, 0.0), (100, 0.0, None)])
def test_eta(left, rate, expected):
    assert eta(left, rate) == expected


def test_progress_totals_and_eta():
    p = DumpProgress([FileProgress("a", bytes_total=100, bytes_read=50, revisions_written=7, state="reading"),
                      FileProgress("b", bytes_total=100)], started=0.0, finished=10.0)
    t = p.totals()
    assert (t["bytes_read"], t["bytes_total"], t["revisions_written"], t["bytes_per_s"]) == (50, 200, 7, 5.0)
    assert t["eta_s"] == 30.0 and t["revisions_per_s"] == 0.7


@both_walks
def test_rows_match_the_api_rows(walk, tmp_path, store):
    revs = (revision_xml(1, 0, text="héllo") + revision_xml(2, 1, ip=True, text="x", minor=True)
            + revision_xml(3, 2, hidden="user comment text") + revision_xml(4, 3, hidden="comment", text="y"))
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(f"<page><title>Talk:T</title><ns>1</ns><id>9</id>{revs}</page>"), encoding="utf-8")
    run = ingest([path], store, tmp_path, session_factory=walk, content=True)
    assert run.run()
    rows = {r.rev_id: r for r in store.revisions(WIKI)}
    one = rows[1]
    assert (one.page_id, one.ns, one.title, one.parent_id, one.user, one.user_id, one.anon, one.size, one.comment,
            one.content_model) == (9, 1, "Talk:T", 0, "U1", 1001, False, 6, "c1", "wikitext")
    assert one.sha1 == hashlib.sha1("héllo".encode()).hexdigest()
    assert one.timestamp == datetime(2020, 1, 2, 10, 0, 1, tzinfo=timezone.utc)
    assert store.content(WIKI, 1) == "héllo"
    two = rows[2]
    assert (two.user, two.user_id, two.anon, two.minor) == ("10.0.0.1", 0, True, True)
    three = rows[3]
    assert (three.user, three.user_id, three.comment, three.sha1, three.size) == (None, None, None, None, 0)
    assert (three.user_hidden, three.comment_hidden, three.text_hidden, three.sha1_hidden) == (True, True, True, True)
    assert store.content(WIKI, 3) is None
    four = rows[4]
    assert (four.comment_hidden, four.comment, four.user_hidden, four.text_hidden) == (True, None, False, False)
    assert run.progress.totals()["revisions_written"] == 4


def bz2_parts(tmp_path, files: int) -> list[Path]:
    """`files` bzip2 dumps of 10 pages of 3 revisions each, page ids 1-10, 11-20, ..."""
    out = []
    for i in range(files):
        f = tmp_path / f"part{i}.xml.bz2"
        f.write_bytes(bz2.compress(dump_xml(pages(1 + 10 * i, 10)).encode()))
        out.append(f)
    return out


class CrashingStore:
    """Passes writes to a real store, then fails like a killed process after `allowed` write_pages calls."""

    def __init__(self, inner, allowed: int):
        self.inner, self.allowed, self.written, self.calls = inner, allowed, [], []

    def write_pages(self, pages):
        if self.allowed == 0:
            raise KeyboardInterrupt("killed")
        self.allowed -= 1
        self.inner.write_pages(pages)
        self.calls.append([len(rows) for rows in pages])
        self.written.extend(r.rev_id for rows in pages for r in rows)


@both_walks
def test_crash_resumes_without_losing_or_rewriting_finished_pages(walk, tmp_path, store):
    files = bz2_parts(tmp_path, 2)
    crashing = CrashingStore(store, allowed=14)       # 10 pages of file 0, 4 of file 1, then the 15th write dies
    first = ingest(files, crashing, tmp_path, checkpoint_every=0.0, writers=1, batch=3)
    with pytest.raises(KeyboardInterrupt):
        first.run()
    cp = Checkpoint(tmp_path / "cp.json")
    assert cp.of(str(files[0])).done and cp.of(str(files[1])).pages == 4
    assert cp.of(str(files[1])).last_page_id == 14

    second = CrashingStore(store, allowed=-1)
    resumed = ingest(files, second, tmp_path)
    assert resumed.run()
    assert sorted(second.written) == sorted(p * 100 + i for p in range(15, 21) for i in range(3))
    assert len(list(store.revisions(WIKI))) == 60
    assert resumed.progress.files[0].state == "done" and resumed.progress.files[0].bytes_read == 0


class Meeting:
    """A store whose first writes wait until `files` different files' writes are in it at once."""

    def __init__(self, inner, files: int):
        self.inner, self.barrier, self.met = inner, threading.Barrier(files, timeout=10), False

    def write_pages(self, pages):
        if not self.met:
            self.barrier.wait()             # BrokenBarrierError (the run's failure) if the files never overlap
            self.met = True
        self.inner.write_pages(pages)


@both_walks
def test_files_read_at_once_are_each_written_whole_and_checkpointed(walk, tmp_path, store):
    files = bz2_parts(tmp_path, 3)
    run = ingest(files, Meeting(store, 2), tmp_path, files_at_once=2, batch=3, checkpoint_every=0.0,
                 session_factory=walk)
    assert run.run()
    assert len(list(store.revisions(WIKI))) == 90
    assert [(f.state, f.pages_written, f.revisions_written) for f in run.progress.files] == [("done", 10, 30)] * 3
    cp = Checkpoint(tmp_path / "cp.json")
    assert [(cp.of(str(f)).done, cp.of(str(f)).pages, cp.of(str(f)).last_page_id) for f in files] == \
        [(True, 10, 10), (True, 10, 20), (True, 10, 30)]


class WaitingFor:
    """A store whose writes wait until `ready()`."""

    def __init__(self, inner, ready):
        self.inner, self.ready = inner, ready

    def write_pages(self, pages):
        deadline = time.monotonic() + 10
        while not self.ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.inner.write_pages(pages)


def test_after_a_file_fails_none_starts_the_ones_reading_end_and_a_resume_reads_the_rest(tmp_path, store):
    first, missing, third = tmp_path / "a.xml", tmp_path / "b.xml", tmp_path / "c.xml"
    first.write_text(dump_xml(pages(1, 10)))
    third.write_text(dump_xml(pages(21, 10)))
    run = ingest([first, missing, third], store, tmp_path, files_at_once=2, batch=3)
    # the first file is still being written when the second fails
    run.store = WaitingFor(store, lambda: run.progress.files[1].state == "failed")
    with pytest.raises(DumpNotFound):
        run.run()
    assert [f.state for f in run.progress.files] == ["done", "failed", "pending"]
    assert {r.page_id for r in store.revisions(WIKI)} == set(range(1, 11))
    cp = Checkpoint(tmp_path / "cp.json")
    assert (cp.of(str(first)).done, cp.of(str(missing)).pages, cp.of(str(third)).pages) == (True, 0, 0)

    missing.write_text(dump_xml(pages(11, 10)))
    resumed = ingest([first, missing, third], store, tmp_path, files_at_once=2)
    assert resumed.run()
    assert resumed.progress.files[0].bytes_read == 0            # done before: not read again
    assert {r.page_id for r in store.revisions(WIKI)} == set(range(1, 31))


def test_an_interrupt_while_files_are_read_at_once_stops_them_checkpointed(tmp_path, store, monkeypatch):
    files = [tmp_path / "a.xml", tmp_path / "b.xml"]
    for i, f in enumerate(files):
        f.write_text(dump_xml(pages(1 + 100 * i, 100)))
    run = ingest(files, store, tmp_path, files_at_once=2, batch=3, checkpoint_every=0.0)
    run.store = WaitingFor(store, lambda: run.stop.is_set())     # both files hold at their first group

    def interrupted(futures):
        wait_for(lambda: all(f.state == "reading" for f in run.progress.files), 10, what="both files reading")
        raise KeyboardInterrupt
    monkeypatch.setattr(dump_ingest, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run.run()
    assert [f.state for f in run.progress.files] == ["stopped", "stopped"]
    assert not [t for t in threading.enumerate() if t.name.startswith("dump-file")]
    cp = Checkpoint(tmp_path / "cp.json")
    assert [cp.of(str(f)).pages for f in files] == [f.pages_written for f in run.progress.files]
    monkeypatch.undo()                          # the resume waits on its files as any run does
    assert ingest(files, store, tmp_path).run()
    assert len(list(store.revisions(WIKI))) == 600


class FailingPage:
    """A store whose write of one page fails, slowly enough that later pages finish first."""

    def __init__(self, inner, page_id: int):
        self.inner, self.page_id = inner, page_id

    def write_pages(self, pages):
        if any(rows[0].page_id == self.page_id for rows in pages):
            time.sleep(0.2)
            raise StoreError("disk full")
        self.inner.write_pages(pages)


def test_concurrent_writes_checkpoint_only_the_leading_finished_pages(tmp_path, store):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(pages(1, 10)))
    with pytest.raises(StoreError, match="disk full"):
        ingest([path], FailingPage(store, 5), tmp_path, writers=4, checkpoint_every=0.0, batch=3).run()
    cp = Checkpoint(tmp_path / "cp.json").of(str(path))
    assert (cp.pages, cp.last_page_id, cp.done) == (4, 4, False)
    assert ingest([path], store, tmp_path).run()
    assert len(list(store.revisions(WIKI))) == 30


@both_walks
def test_stop_between_pages_then_resume(walk, tmp_path, store):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(pages(1, 10)))
    stop = threading.Event()
    stopping = CrashingStore(store, allowed=-1)
    original = stopping.write_pages
    stopping.write_pages = lambda pages: (stop.set(), original(pages))  # type: ignore[method-assign]
    run = ingest([path], stopping, tmp_path, session_factory=walk, writers=1, stop=stop, batch=3)
    assert run.run() is False
    assert run.progress.files[0].state == "stopped" and run.progress.files[0].pages_written == 1
    assert Checkpoint(tmp_path / "cp.json").of(str(path)).pages == 1
    assert ingest([path], store, tmp_path, session_factory=walk).run()
    assert len(list(store.revisions(WIKI))) == 30


def reading_ahead() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dump-read" and t.is_alive()]


def test_reading_ahead_ends_with_the_file_however_it_ends(tmp_path, store, monkeypatch):
    monkeypatch.setattr(dump_stream, "INFLATE_IN", 1 << 12)     # small blocks: the thread is mid-file when stopped
    monkeypatch.setattr(dump_stream, "INFLATE_OUT", 1 << 15)
    path = tmp_path / "d.xml.bz2"
    path.write_bytes(bz2.compress(dump_xml(pages(1, 3000)).encode(), 1))   # several MB decompressed
    stop = threading.Event()
    stopping = CrashingStore(store, allowed=-1)
    original = stopping.write_pages
    stopping.write_pages = lambda pages: (stop.set(), original(pages))  # type: ignore[method-assign]
    run = ingest([path], stopping, tmp_path, stop=stop, batch=30)
    assert run.run() is False and run.progress.files[0].bytes_read < path.stat().st_size
    assert reading_ahead() == []
    assert ingest([path], store, tmp_path).run()
    assert reading_ahead() == [] and len(list(store.revisions(WIKI))) == 9000


@both_walks
def test_resume_refuses_a_changed_file(walk, tmp_path, store):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(pages(1, 3)))
    cp = Checkpoint(tmp_path / "cp.json")
    cp.of(str(path)).pages, cp.of(str(path)).last_page_id = 2, 77
    cp.save()
    with pytest.raises(DumpCorrupt, match="changed"):
        ingest([path], store, tmp_path, session_factory=walk).run()


@both_walks
@pytest.mark.parametrize("kind, cut", [("gz", 0.6), ("bz2", 0.6), ("xml", 0.6)])
def test_truncated_file_keeps_the_pages_before(walk, tmp_path, store, kind, cut):
    raw = dump_xml(pages(1, 600)).encode()   # bzip2 level 1 decompresses by 100 kB blocks: several blocks
    data = {"gz": gzip.compress, "bz2": lambda b: bz2.compress(b, 1), "xml": lambda b: b}[kind](raw)
    path = tmp_path / f"d.xml.{kind}" if kind != "xml" else tmp_path / "d.xml"
    path.write_bytes(data[:int(len(data) * cut)])
    run = ingest([path], store, tmp_path, session_factory=walk, checkpoint_every=0.0, batch=30)
    with pytest.raises(DumpCorrupt):
        run.run()
    done = Checkpoint(tmp_path / "cp.json").of(str(path))
    assert not done.done and done.pages > 0
    stored = {r.page_id for r in store.revisions(WIKI)}
    assert set(range(1, done.pages + 1)) <= stored
    assert run.progress.files[0].state == "failed" and "DumpCorrupt" in (run.progress.files[0].error or "")
    assert reading_ahead() == []


@both_walks
def test_corrupt_bzip2_is_named(walk, tmp_path, store):
    data = bytearray(bz2.compress(dump_xml(pages(1, 40)).encode()))
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0x5A
    path = tmp_path / "d.xml.bz2"
    path.write_bytes(bytes(data))
    with pytest.raises(DumpCorrupt):
        ingest([path], store, tmp_path, session_factory=walk).run()


@both_walks
def test_unknown_schema_and_wrong_wiki(walk, tmp_path, store):
    odd = tmp_path / "odd.xml"
    odd.write_text(dump_xml(pages(1, 1), version="0.99"))
    with pytest.raises(DumpSchemaUnknown):
        ingest([odd], store, tmp_path, session_factory=walk).run()
    other = tmp_path / "other.xml"
    other.write_text(dump_xml(pages(1, 1), dbname="enwiki"))
    with pytest.raises(DumpWrongWiki):
        ingest([other], store, tmp_path, session_factory=walk, expected=ExpectedSite(dbname="genwiki")).run()
    assert list(store.revisions(WIKI)) == []


@both_walks
def test_missing_local_file(walk, tmp_path, store):
    with pytest.raises(DumpNotFound):
        ingest([tmp_path / "absent.xml"], store, tmp_path, session_factory=walk).run()


@responses.activate
def test_http_404_and_timeouts(tmp_path, store):
    responses.get("http://dumps.test/a.xml.gz", status=404)
    responses.get("http://dumps.test/b.xml.gz", body=requests.ConnectTimeout("connect timed out"))
    with pytest.raises(DumpNotFound, match="404"):
        ingest(["http://dumps.test/a.xml.gz"], store, tmp_path).run()
    with pytest.raises(DumpStalled):
        ingest(["http://dumps.test/b.xml.gz"], store, tmp_path).run()


@responses.activate
def test_http_stream_with_length(tmp_path, store):
    body = gzip.compress(dump_xml(pages(1, 5)).encode())
    responses.get("http://dumps.test/a.xml.gz", body=body, headers={"Content-Length": str(len(body))})
    run = ingest(["http://dumps.test/a.xml.gz"], store, tmp_path)
    assert run.run()
    f = run.progress.files[0]
    assert (f.bytes_read, f.bytes_total, f.revisions_read, f.revisions_written) == (len(body), len(body), 15, 15)
    assert run.progress.totals()["eta_s"] == 0.0


def test_long_history_written_in_store_batches(tmp_path, store):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(page_xml(1, 12)))
    counting = CrashingStore(store, allowed=-1)
    assert ingest([path], counting, tmp_path, batch=5).run()
    assert counting.calls == [[5], [5], [2]]


def test_small_pages_are_written_together_up_to_the_batch(tmp_path, store):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(pages(1, 3, revisions=2) + page_xml(4, 7) + pages(5, 4, revisions=1)))
    counting = CrashingStore(store, allowed=-1)
    run = ingest([path], counting, tmp_path, batch=5, writers=1)
    assert run.run()
    # whole pages while they fit; the long page alone, in parts; the rest together
    assert counting.calls == [[2, 2], [2], [5], [2], [1, 1, 1, 1]]
    assert run.progress.files[0].pages_written == 8
    assert len(list(store.revisions(WIKI))) == 17


@both_walks
def test_a_crash_inside_a_long_page_resumes_after_its_written_parts(walk, tmp_path, store):
    path = tmp_path / "d.xml.bz2"
    path.write_bytes(bz2.compress(dump_xml(pages(1, 2, revisions=2) + page_xml(3, 12) + pages(4, 1)).encode()))
    crashing = CrashingStore(store, allowed=2)      # pages 1-2 with the first part of page 3, the second part dies
    with pytest.raises(KeyboardInterrupt):
        ingest([path], crashing, tmp_path, session_factory=walk, checkpoint_every=0.0, batch=5).run()
    assert crashing.calls == [[2, 2], [5]]
    cp = Checkpoint(tmp_path / "cp.json").of(str(path))
    assert (cp.pages, cp.last_page_id, cp.part_page_id, cp.part_revisions, cp.revisions) == (2, 2, 3, 5, 9)

    resumed = CrashingStore(store, allowed=-1)
    assert ingest([path], resumed, tmp_path, session_factory=walk, batch=5).run()
    assert resumed.calls == [[5], [2], [3]]         # page 3's second and last parts, then page 4
    assert resumed.written == [*range(305, 312), 400, 401, 402]
    assert Checkpoint(tmp_path / "cp.json").of(str(path)) == FileCheckpoint(True, 4, 4, 19)
    assert len(list(store.revisions(WIKI))) == 19


def test_a_long_page_is_handed_over_in_parts_never_whole(tmp_path):
    """The walk never holds more than a part of a page's history: each part is built as it is handed over."""
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(page_xml(1, 12) + page_xml(2, 5)))
    built: list[int] = []
    spec = WalkSpec(str(path), WIKI, part=5)
    with walk_here(spec, requests.Session(), lambda n: None) as (_, walked):
        for parsed in walked:
            built.append(len(parsed.rows))
            assert sum(built) == parsed.offset + len(parsed.rows) + (12 if parsed.page_id == 2 else 0)
    assert built == [5, 5, 2, 5]
    with walk_here(replace(spec, part_page_id=1, part_revisions=10), requests.Session(), lambda n: None) as (_, w):
        assert [(p.page_id, p.offset, p.last, [r.rev_id for r in p.rows]) for p in w] == [
            (1, 10, True, [110, 111]), (2, 0, True, [200, 201, 202, 203, 204])]


def test_checkpoint_is_replaced_atomically(tmp_path):
    cp = Checkpoint(tmp_path / "sub" / "cp.json")
    cp.of("a").pages = 3
    cp.save()
    assert Checkpoint(tmp_path / "sub" / "cp.json").of("a").pages == 3
    assert [p.name for p in Path(tmp_path / "sub").iterdir()] == ["cp.json"]


def test_the_checkpoint_counts_the_revisions_written_and_reads_files_from_before_it_did(tmp_path, store):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(pages(1, 4)))
    assert ingest([path], store, tmp_path, batch=3).run()
    assert Checkpoint(tmp_path / "cp.json").of(str(path)) == FileCheckpoint(True, 4, 4, 12)
    old = tmp_path / "old.json"
    old.write_text('{"files": {"a": {"done": false, "pages": 2, "last_page_id": 7}}}')
    assert Checkpoint(old).of("a") == FileCheckpoint(False, 2, 7, 0)


def test_a_checkpoint_without_a_path_lives_in_memory(tmp_path, store):
    path = tmp_path / "d.xml"
    path.write_text(dump_xml(pages(1, 4)))
    cp = Checkpoint(None, {str(path): FileCheckpoint(pages=2, last_page_id=2, revisions=6)})
    run = DumpIngest([str(path)], wiki=WIKI, store=store, checkpoint=cp, http=requests.Session())
    assert run.run()
    assert run.figures()[0] == FileCheckpoint(True, 4, 4, 12)
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".json", ".tmp")]
    assert {r.page_id for r in store.revisions(WIKI)} == {3, 4}


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


TEXT = "".join(f"<revision>{i} ünïcödé {'x' * (i % 50)}</revision>\n" for i in range(20_000)).encode()


@pytest.mark.parametrize("kind, compressed", [
    ("bzip2", bz2.compress(TEXT)),
    ("bzip2", bz2.compress(TEXT[:50_000]) + bz2.compress(TEXT[50_000:])),             # multistream
    ("bzip2", bz2.compress(TEXT) + b"trailing bytes that start no stream"),           # ignored, as BZ2File does
    ("gzip", gzip.compress(TEXT)),
    ("gzip", gzip.compress(TEXT[:50_000]) + b"\0\0\0" + gzip.compress(TEXT[50_000:])),  # members, zero padding
    ("plain", TEXT),
])
@pytest.mark.parametrize("chunk, joined", [(7, 1000), (65_536, 1 << 20), (10_000_000, 1 << 20)])
def test_blocks_decompress_as_the_standard_files_do(kind, compressed, chunk, joined, monkeypatch):
    monkeypatch.setattr(dump_stream, "INFLATE_IN", joined)
    assert b"".join(dump_stream._blocks(split(compressed, chunk), kind)) == TEXT


@pytest.mark.parametrize("kind, compress", [("bzip2", bz2.compress), ("gzip", gzip.compress)])
def test_blocks_of_a_cut_stream_end_in_eof_error(kind, compress):
    data = compress(TEXT)
    with pytest.raises(EOFError):
        b"".join(dump_stream._blocks(split(data[:len(data) // 2], 65_536), kind))


def test_blocks_check_the_gzip_crc():
    data = bytearray(gzip.compress(TEXT))
    data[-8] ^= 0xFF                                   # the trailer's CRC32
    with pytest.raises(zlib.error):
        b"".join(dump_stream._blocks([bytes(data)], "gzip"))


@pytest.mark.parametrize("kind, compress", [("bzip2", bz2.compress), ("gzip", gzip.compress)])
def test_a_block_is_bounded_however_well_the_data_compresses(kind, compress, monkeypatch):
    monkeypatch.setattr(dump_stream, "INFLATE_OUT", 1 << 16)
    zeros = bytes(20 * dump_stream.INFLATE_OUT)
    blocks = list(dump_stream._blocks([compress(zeros)], kind))
    assert max(map(len, blocks)) <= dump_stream.INFLATE_OUT and sum(map(len, blocks)) == len(zeros)


@both_walks
def test_a_namespace_set_writes_only_its_namespaces_and_resumes_past_the_others(walk, store, tmp_path):
    talk = "".join(page_xml(p, 2).replace("<ns>0</ns>", "<ns>1</ns>") for p in (3, 4))
    path = tmp_path / "ns.xml"
    path.write_text(dump_xml(pages(1, 2, 2) + talk + pages(5, 1, 2)), encoding="utf-8")
    run = ingest([path], store, tmp_path, session_factory=walk, namespaces=[1])
    assert run.run() is True
    assert sorted({r.page_id for r in store.revisions(WIKI)}) == [3, 4]
    assert {r.ns for r in store.revisions(WIKI)} == {1}
    assert run.progress.files[0].revisions_written == 4
    cp = run.checkpoint.of(str(path))
    assert (cp.done, cp.pages, cp.last_page_id, cp.revisions) == (True, 4, 4, 4)     # position in the file


@both_walks
@pytest.mark.parametrize("namespaces, page_ids, kept", [
    (None, [2, 5], [2, 5]),             # a category set: its members only
    (None, [], []),                     # a category without members: nothing
    ([1], [2, 3], [3]),                 # both filters hold
])
def test_a_category_set_writes_only_its_members(walk, store, tmp_path, namespaces, page_ids, kept):
    talk = page_xml(3, 2).replace("<ns>0</ns>", "<ns>1</ns>")
    path = tmp_path / "members.xml"
    path.write_text(dump_xml(pages(1, 2, 2) + talk + pages(4, 2, 2)), encoding="utf-8")
    run = ingest([path], store, tmp_path, session_factory=walk, namespaces=namespaces, page_ids=page_ids)
    assert run.run() is True
    assert sorted({r.page_id for r in store.revisions(WIKI)}) == kept
    # the resume point is the file position of the last page written (pages 1-5 are at positions 1-5)
    assert run.checkpoint.of(str(path)).pages == max(kept, default=0)


def test_an_ingest_without_a_session_or_a_session_factory_is_refused(store, tmp_path):
    with pytest.raises(ValueError, match="session"):
        DumpIngest(["x.xml"], wiki=WIKI, store=store, checkpoint=Checkpoint(tmp_path / "cp.json"))
    with pytest.raises(ValueError, match="files_at_once"):
        ingest(["x.xml"], store, tmp_path, files_at_once=0)


def test_an_ingest_walking_in_child_processes_needs_no_session_of_its_own(store, tmp_path):
    path = tmp_path / "one.xml"
    path.write_text(dump_xml(pages(1, 3)))
    run = DumpIngest([str(path)], wiki=WIKI, store=store, checkpoint=Checkpoint(tmp_path / "cp.json"),
                     session_factory=requests.Session)
    run.run()
    assert run.progress.files[0].revisions_written == len(list(store.revisions(WIKI))) == 9
