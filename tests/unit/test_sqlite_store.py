"""The RevisionStore contract on SQLite, plus what only the embedded store promises: several
processes writing one file."""
import dataclasses
import multiprocessing
import sqlite3

import pytest

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
