"""The RevisionStore contract on SQLite, plus what only the embedded store promises: several
processes writing one file."""
import dataclasses
import multiprocessing
import re
import sqlite3
from pathlib import Path

import pytest

from shared.revisions.census_listing_rows import TTL_S, pack
from shared.revisions.sqlite_store import SQLiteRevisionStore
from tests.revision_store_contract import RevisionStoreContract, make_history, newest_first


class TestSQLiteRevisionStore(RevisionStoreContract):
    @pytest.fixture
    def store(self, sqlite_revision_store):
        return sqlite_revision_store

    @pytest.fixture
    def stored_size_delta(self, sqlite_revision_store):
        def read(wiki, rev_id):
            with sqlite3.connect(sqlite_revision_store._path) as conn:
                row = conn.execute("SELECT size_delta FROM revisions WHERE wiki = ? AND rev_id = ?",
                                   (wiki, rev_id)).fetchone()
            return row[0]
        return read

    @pytest.fixture
    def poisoned(self):
        return lambda revision: dataclasses.replace(revision, title=None)   # violates NOT NULL

    @pytest.fixture
    def store_env(self, tmp_path):
        return {"BW_REVISIONS_SQLITE": str(tmp_path / "factory.db")}


def _write_pages(path: str, wiki: str, page_ids: list[int]) -> None:
    store = SQLiteRevisionStore(path)
    for page_id in page_ids:
        revisions = make_history(wiki, page_id, 60, first_rev_id=page_id * 1000)
        for start in range(0, len(revisions), 10):
            store.write(revisions[start:start + 10])
    store.close()


def test_two_processes_write_one_file(tmp_path):
    path = str(tmp_path / "shared.db")
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_pages, args=(path, "w.example.org", pages))
               for pages in ([1, 2, 3], [4, 5, 6])]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    store = SQLiteRevisionStore(path)
    try:
        assert [store.page("w.example.org", p).revisions for p in range(1, 7)] == [60] * 6
        assert len(list(store.revisions("w.example.org"))) == 360
    finally:
        store.close()


def test_data_survives_reopening(tmp_path):
    path = str(tmp_path / "r.db")
    revisions = make_history("w.example.org", 1, 5)
    first = SQLiteRevisionStore(path)
    first.write(revisions)
    first.close()
    second = SQLiteRevisionStore(path)
    try:
        assert second.resume_point("w.example.org", 1).rev_id == revisions[-1].rev_id
    finally:
        second.close()


def test_reads_page_through_keysets(sqlite_revision_store, monkeypatch):
    monkeypatch.setattr("shared.revisions.sqlite_store.READ_CHUNK", 7)
    revisions = make_history("w.example.org", 1, 30)
    # same-second neighbours must neither repeat nor vanish at a chunk boundary
    revisions[8:12] = [dataclasses.replace(r, timestamp=revisions[8].timestamp) for r in revisions[8:12]]
    sqlite_revision_store.write(revisions)
    history = list(sqlite_revision_store.history("w.example.org", 1))
    assert history == newest_first(revisions)
    assert sorted(r.rev_id for r in sqlite_revision_store.revisions()) == [r.rev_id for r in revisions]


def test_a_census_listing_cut_short_expires_as_in_cassandra(tmp_path):
    """A census whose reader died never drops its listing: its rows go TTL_S after they were written, at the next
    listing written; a listing still in use within that time is untouched."""
    now = [1_000_000.0]
    store = SQLiteRevisionStore(str(tmp_path / "r.db"), clock=lambda: now[0])
    store.add_listing("w", "set/old", 0, {7: [70]})
    now[0] += TTL_S - 1
    store.add_listing("w", "set/new", 0, {8: [80]})
    assert {p: list(ids) for p, ids in store.listing("w", "set/old", 0).items()} == {7: [70]}
    now[0] += 2
    assert store.listing("w", "set/old", 0) == {}                  # expired for readers at once, as in Cassandra
    store.add_listing("w", "set/new", 1, {9: [90]})
    with sqlite3.connect(tmp_path / "r.db") as conn:
        left = conn.execute("SELECT census, shard FROM census_listing ORDER BY census, shard").fetchall()
    assert left == [("set/new", 0), ("set/new", 1)]


def test_a_file_from_before_listing_times_keeps_its_listing_rows_for_a_whole_ttl(tmp_path):
    path = tmp_path / "r.db"
    with sqlite3.connect(path) as conn:                           # the table as its first release made it
        conn.execute("CREATE TABLE census_listing (wiki TEXT NOT NULL, census TEXT NOT NULL, shard INTEGER NOT NULL, "
                     "page_id INTEGER NOT NULL, first_rev INTEGER NOT NULL, rev_ids BLOB NOT NULL, "
                     "PRIMARY KEY (wiki, census, shard, page_id, first_rev))")
        conn.execute("INSERT INTO census_listing VALUES ('w', 'set/a', 0, 7, 70, ?)", (pack([70, 71]),))
    now = [5_000_000.0]
    store = SQLiteRevisionStore(str(path), clock=lambda: now[0])
    assert {p: list(ids) for p, ids in store.listing("w", "set/a", 0).items()} == {7: [70, 71]}
    now[0] += TTL_S - 1
    store.add_listing("w", "set/b", 0, {8: [80]})
    assert {p: list(ids) for p, ids in store.listing("w", "set/a", 0).items()} == {7: [70, 71]}
    store.close()
    assert SQLiteRevisionStore(str(path), clock=lambda: now[0]).listing("w", "set/b", 0) != {}   # opened again


def test_the_listing_ttl_is_cassandras():
    schema = (Path(__file__).parents[2] / "cassandra" / "schema.cql").read_text()
    table = schema[schema.index("blackwidow.census_listing ("):]
    assert re.search(r"default_time_to_live = (\d+)", table).group(1) == str(TTL_S)
