"""RevisionStore on one SQLite file: the embedded default when no Cassandra is configured.

WAL mode and a busy timeout let several processes (spawns, the stats command) share the file; each
write() or write_pages() is one IMMEDIATE transaction, so a page's totals and latest revision never run ahead of
its rows.
"""
import json
import os
import sqlite3
import threading
import time
from datetime import datetime, timezone
from array import array
from typing import Callable, Collection, Iterable, Iterator, Mapping, Sequence

from shared.revisions import census_listing_rows
from shared.revisions.derived import (
    CONTENT_CODEC, EARLIEST, LATEST, PageRows, compress_text, decompress_text, described, missing_parents,
    one_page, page_rows, size_deltas, utc)
from shared.revisions.model import PageState, ResumePoint, Revision
from shared.revisions.store import StoreError
from shared.sqlite_wal import enable_wal

BUSY_TIMEOUT_S = 30.0
READ_CHUNK = 1000
IN_CHUNK = 500          # page ids one read names (SQLite allows 32,766 bound values)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS revisions (
  wiki TEXT NOT NULL,
  rev_id INTEGER NOT NULL,
  page_id INTEGER NOT NULL,
  ns INTEGER NOT NULL,
  title TEXT NOT NULL,
  parent_id INTEGER NOT NULL,
  rev_ts TEXT NOT NULL,              -- UTC 'YYYY-MM-DDTHH:MM:SS.fffZ': sorts as text, date() reads it
  user_text TEXT,
  user_id INTEGER,
  anon INTEGER NOT NULL,
  minor INTEGER NOT NULL,
  size INTEGER NOT NULL,
  size_delta INTEGER,                -- size minus the parent's size (shared.revisions.derived.size_deltas)
  sha1 TEXT,
  comment TEXT,
  tags TEXT NOT NULL,                -- JSON array, sorted
  content_model TEXT,
  user_hidden INTEGER NOT NULL,
  comment_hidden INTEGER NOT NULL,
  sha1_hidden INTEGER NOT NULL,
  text_hidden INTEGER NOT NULL,
  PRIMARY KEY (wiki, rev_id)
);
CREATE INDEX IF NOT EXISTS revisions_by_page ON revisions (wiki, page_id, rev_ts, rev_id);
CREATE INDEX IF NOT EXISTS revisions_by_user ON revisions (wiki, user_text, rev_ts);
CREATE INDEX IF NOT EXISTS revisions_by_time ON revisions (wiki, rev_ts);
CREATE TABLE IF NOT EXISTS revision_content (
  wiki TEXT NOT NULL,
  rev_id INTEGER NOT NULL,
  codec TEXT NOT NULL,
  body BLOB NOT NULL,
  PRIMARY KEY (wiki, rev_id)
);
CREATE TABLE IF NOT EXISTS pages (
  wiki TEXT NOT NULL,
  page_id INTEGER NOT NULL,
  ns INTEGER NOT NULL,
  title TEXT NOT NULL,
  latest_rev_id INTEGER NOT NULL,
  latest_rev_ts TEXT NOT NULL,
  latest_size INTEGER NOT NULL,
  first_month INTEGER NOT NULL,
  revisions INTEGER NOT NULL,
  PRIMARY KEY (wiki, page_id)
);
-- pages deleted on their wiki (mark_deleted): apart from pages, which every write replaces whole
CREATE TABLE IF NOT EXISTS deleted_pages (
  wiki TEXT NOT NULL,
  page_id INTEGER NOT NULL,
  PRIMARY KEY (wiki, page_id)
);
-- a census's listing (add_listing, shared.revisions.census_listing_rows), written_at in epoch seconds: its rows
-- expire census_listing_rows.TTL_S after it, as Cassandra's do (the column and its index: _LISTING_ADD)
CREATE TABLE IF NOT EXISTS census_listing (
  wiki TEXT NOT NULL,
  census TEXT NOT NULL,
  shard INTEGER NOT NULL,
  page_id INTEGER NOT NULL,
  first_rev INTEGER NOT NULL,
  rev_ids BLOB NOT NULL,
  PRIMARY KEY (wiki, census, shard, page_id, first_rev)
);
"""

# Added to census_listing after its first release: a file that lacks the column gets it, its rows stamped as written
# when the file is opened (they then last TTL_S from there, never less).
_LISTING_ADD = "ALTER TABLE census_listing ADD COLUMN written_at REAL"
_LISTING_STAMP = "UPDATE census_listing SET written_at = ? WHERE written_at IS NULL"
_LISTING_INDEX = "CREATE INDEX IF NOT EXISTS census_listing_written ON census_listing (written_at)"

_COLUMNS = ("wiki, rev_id, page_id, ns, title, parent_id, rev_ts, user_text, user_id, anon, minor, size, "
            "size_delta, sha1, comment, tags, content_model, "
            "user_hidden, comment_hidden, sha1_hidden, text_hidden")
_INSERT = f"INSERT OR REPLACE INTO revisions ({_COLUMNS}) VALUES ({', '.join('?' * 21)})"
# The page row is recomputed from the stored rows inside the same transaction: exact and convergent.
_REFRESH_PAGE = """
INSERT OR REPLACE INTO pages
SELECT r.wiki, r.page_id, r.ns, r.title, r.rev_id, r.rev_ts, r.size,
       (SELECT CAST(strftime('%Y%m', MIN(rev_ts)) AS INTEGER) FROM revisions
        WHERE wiki = ?1 AND page_id = ?2),
       (SELECT COUNT(*) FROM revisions WHERE wiki = ?1 AND page_id = ?2)
FROM revisions r WHERE r.wiki = ?1 AND r.page_id = ?2
ORDER BY r.rev_ts DESC, r.rev_id DESC LIMIT 1
"""


def format_ts(ts: datetime) -> str:
    """Millisecond precision, as Cassandra keeps it, so both stores return equal timestamps."""
    return utc(ts).strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc(ts).microsecond // 1000:03d}Z"


def parse_ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)


class SQLiteRevisionStore:
    def __init__(self, path: str, *, clock: Callable[[], float] = time.time):
        self._path = path
        self._clock = clock             # epoch seconds: when listing rows are written and expire
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        conn = self._conn()
        try:
            with _transaction(conn):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if "written_at" not in {row[1] for row in conn.execute("PRAGMA table_info(census_listing)")}:
                    conn.execute(_LISTING_ADD)
                    conn.execute(_LISTING_STAMP, (self._clock(),))
                conn.execute(_LISTING_INDEX)
        except sqlite3.Error as exc:
            raise StoreError(f"opening {path} failed: {exc}") from exc

    def _conn(self) -> sqlite3.Connection:
        """One connection per thread: a spawn writes from several source threads at once."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            enable_wal(conn, BUSY_TIMEOUT_S)
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    # -- writing -------------------------------------------------------------------------------

    def write(self, revisions: Sequence[Revision]) -> None:
        if revisions:
            one_page(revisions)
            self.write_pages([revisions])

    def write_pages(self, pages: Iterable[Sequence[Revision]]) -> None:
        """Several pages in one transaction: all of them are stored, or none."""
        rows = page_rows(pages)
        if not rows:
            return
        conn = self._conn()
        try:
            with _transaction(conn):
                for page in rows:
                    _write_page(conn, page)
        except sqlite3.Error as exc:
            raise StoreError(f"writing {described(rows)} failed: {exc}") from exc

    def hide_revision_fields(self, wiki: str, rev_id: int, *, text: bool = False, comment: bool = False,
                             user: bool = False) -> bool:
        """Remove what revision deletion hides: the text, the comment, the user. False when not stored."""
        conn = self._conn()
        try:
            with _transaction(conn):
                if conn.execute("SELECT 1 FROM revisions WHERE wiki = ? AND rev_id = ?", (wiki, rev_id)).fetchone() \
                        is None:
                    return False
                if text:
                    conn.execute("DELETE FROM revision_content WHERE wiki = ? AND rev_id = ?", (wiki, rev_id))
                    conn.execute("UPDATE revisions SET text_hidden = 1, sha1 = NULL, sha1_hidden = 1 "
                                 "WHERE wiki = ? AND rev_id = ?", (wiki, rev_id))
                if comment:
                    conn.execute("UPDATE revisions SET comment = NULL, comment_hidden = 1 "
                                 "WHERE wiki = ? AND rev_id = ?", (wiki, rev_id))
                if user:
                    conn.execute("UPDATE revisions SET user_text = NULL, user_id = NULL, user_hidden = 1 "
                                 "WHERE wiki = ? AND rev_id = ?", (wiki, rev_id))
            return True
        except sqlite3.Error as exc:
            raise StoreError(f"hiding fields of {wiki} revision {rev_id} failed: {exc}") from exc

    def mark_deleted(self, wiki: str, page_id: int) -> bool:
        """The page's texts removed and its mark set in one transaction."""
        conn = self._conn()
        try:
            with _transaction(conn):
                if conn.execute("SELECT 1 FROM pages WHERE wiki = ? AND page_id = ?", (wiki, page_id)).fetchone() \
                        is None:
                    return False
                conn.execute("DELETE FROM revision_content WHERE wiki = ?1 AND rev_id IN "
                             "(SELECT rev_id FROM revisions WHERE wiki = ?1 AND page_id = ?2)", (wiki, page_id))
                conn.execute("INSERT OR IGNORE INTO deleted_pages (wiki, page_id) VALUES (?, ?)", (wiki, page_id))
            return True
        except sqlite3.Error as exc:
            raise StoreError(f"marking {wiki} page {page_id} deleted failed: {exc}") from exc

    def mark_restored(self, wiki: str, page_id: int) -> None:
        self._change(f"marking {wiki} page {page_id} restored",
                     "DELETE FROM deleted_pages WHERE wiki = ? AND page_id = ?", [(wiki, page_id)])

    # -- reading -------------------------------------------------------------------------------

    def resume_point(self, wiki: str, page_id: int) -> ResumePoint | None:
        state = self.page(wiki, page_id)
        return None if state is None else ResumePoint(state.latest_rev_id, state.latest_timestamp)

    def page(self, wiki: str, page_id: int) -> PageState | None:
        row = self._query("SELECT title, latest_rev_id, latest_rev_ts, revisions, EXISTS (SELECT 1 FROM "
                          "deleted_pages d WHERE d.wiki = p.wiki AND d.page_id = p.page_id) FROM pages p "
                          "WHERE wiki = ? AND page_id = ?", (wiki, page_id))
        if not row:
            return None
        title, rev_id, ts, count, deleted = row[0]
        return PageState(wiki, page_id, title, rev_id, parse_ts(ts), count, bool(deleted))

    def history(self, wiki: str, page_id: int, *, since: datetime | None = None,
                until: datetime | None = None) -> Iterator[Revision]:
        # keyset pages: no cursor stays open between yields, so writers are never blocked by a reader
        cursor = (format_ts(until or LATEST), float("inf"))
        lo = format_ts(since or EARLIEST)
        while True:
            rows = self._query(
                f"SELECT {_COLUMNS} FROM revisions WHERE wiki = ? AND page_id = ? AND rev_ts >= ? "
                "AND (rev_ts < ? OR (rev_ts = ? AND rev_id <= ?)) ORDER BY rev_ts DESC, rev_id DESC LIMIT ?",
                (wiki, page_id, lo, cursor[0], cursor[0], cursor[1], READ_CHUNK))
            for row in rows:
                yield _revision(row)
            if len(rows) < READ_CHUNK:
                return
            cursor = (rows[-1][6], rows[-1][1] - 1)

    def stored_ids(self, wiki: str, page_ids: Collection[int], until: datetime) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {page_id: [] for page_id in page_ids}
        ids = sorted(out)
        for i in range(0, len(ids), IN_CHUNK):
            part = ids[i:i + IN_CHUNK]
            rows = self._query(f"SELECT page_id, rev_id FROM revisions WHERE wiki = ? AND page_id IN "
                               f"({', '.join('?' * len(part))}) AND rev_ts <= ?", (wiki, *part, format_ts(until)))
            for page_id, rev_id in rows:
                out[page_id].append(rev_id)
        return out

    def revisions(self, wiki: str | None = None) -> Iterable[Revision]:
        where, params = ("wiki = ? AND", (wiki,)) if wiki is not None else ("", ())
        cursor = ("", -1)
        while True:
            rows = self._query(
                f"SELECT {_COLUMNS} FROM revisions WHERE {where} (wiki, rev_id) > (?, ?) "
                "ORDER BY wiki, rev_id LIMIT ?", (*params, *cursor, READ_CHUNK))
            for row in rows:
                yield _revision(row)
            if len(rows) < READ_CHUNK:
                return
            cursor = (rows[-1][0], rows[-1][1])

    def page_id(self, wiki: str, title: str) -> int | None:
        rows = self._query("SELECT page_id FROM pages WHERE wiki = ? AND title = ? ORDER BY latest_rev_ts DESC "
                           "LIMIT 1", (wiki, title))
        return rows[0][0] if rows else None

    def wikis(self) -> list[str]:
        return [row[0] for row in self._query("SELECT DISTINCT wiki FROM pages ORDER BY wiki", ())]

    def content(self, wiki: str, rev_id: int) -> str | None:
        rows = self._query("SELECT codec, body FROM revision_content WHERE wiki = ? AND rev_id = ?",
                           (wiki, rev_id))
        return decompress_text(*rows[0]) if rows else None

    # -- a census's listing --------------------------------------------------------------------

    def add_listing(self, wiki: str, census: str, shard: int, pages: Mapping[int, Sequence[int]]) -> None:
        """The rows of every census written more than TTL_S ago go first, as Cassandra's expire."""
        now = self._clock()
        self._change("removing expired census listings", "DELETE FROM census_listing WHERE written_at < ?",
                     [(now - census_listing_rows.TTL_S,)])
        self._change(f"writing census {census} shard {shard}",
                     "INSERT OR REPLACE INTO census_listing "
                     "(wiki, census, shard, page_id, first_rev, rev_ids, written_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(wiki, census, shard, page_id, ids[0], census_listing_rows.pack(ids), now)
                      for page_id, ids in pages.items() if ids])

    def listing(self, wiki: str, census: str, shard: int) -> dict[int, array]:
        return census_listing_rows.gathered(self._query(
            "SELECT page_id, rev_ids FROM census_listing WHERE wiki = ? AND census = ? AND shard = ? "
            "AND written_at >= ?", (wiki, census, shard, self._clock() - census_listing_rows.TTL_S)))

    def drop_listing(self, wiki: str, census: str, shards: int) -> None:
        self._change(f"removing census {census}", "DELETE FROM census_listing WHERE wiki = ? AND census = ?",
                     [(wiki, census)])

    def _change(self, what: str, sql: str, rows: list[tuple]) -> None:
        """One statement over `rows`, in one transaction."""
        conn = self._conn()
        try:
            with _transaction(conn):
                conn.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise StoreError(f"{what} failed: {exc}") from exc

    def _query(self, sql: str, params: tuple) -> list[tuple]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()


class _transaction:
    """BEGIN IMMEDIATE takes the write lock up front, so the busy timeout applies instead of a
    deadlock error when two processes upgrade read locks at once."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def __enter__(self):
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self._conn.execute("COMMIT")
                return False
            except sqlite3.Error:
                self._conn.execute("ROLLBACK")
                raise
        self._conn.execute("ROLLBACK")
        return False


def _write_page(conn: sqlite3.Connection, page: PageRows) -> None:
    """One page's rows and content, then its page row recomputed from what is stored (same transaction)."""
    revisions, wiki = page.revisions, page.wiki
    parents = sorted(missing_parents(revisions))
    marks = ", ".join("?" * len(parents))
    stored_sizes = dict(conn.execute(f"SELECT rev_id, size FROM revisions WHERE wiki = ? AND rev_id IN ({marks})",
                                     (wiki, *parents))) if parents else {}
    deltas = size_deltas(revisions, stored_sizes)
    conn.executemany(_INSERT, [_row(r, deltas[r.rev_id]) for r in revisions])
    conn.executemany("INSERT OR REPLACE INTO revision_content (wiki, rev_id, codec, body) VALUES (?, ?, ?, ?)",
                     [(r.wiki, r.rev_id, CONTENT_CODEC, compress_text(r.content))
                      for r in revisions if r.content is not None])
    conn.execute(_REFRESH_PAGE, (wiki, page.page_id))


def _row(r: Revision, delta: int | None) -> tuple:
    return (r.wiki, r.rev_id, r.page_id, r.ns, r.title, r.parent_id, format_ts(r.timestamp), r.user,
            r.user_id, int(r.anon), int(r.minor), r.size, delta, r.sha1, r.comment,
            json.dumps(sorted(set(r.tags))), r.content_model, int(r.user_hidden), int(r.comment_hidden),
            int(r.sha1_hidden), int(r.text_hidden))


def _revision(row: tuple) -> Revision:
    (wiki, rev_id, page_id, ns, title, parent_id, ts, user, user_id, anon, minor, size, _delta, sha1, comment,
     tags, content_model, user_hidden, comment_hidden, sha1_hidden, text_hidden) = row
    return Revision(wiki=wiki, page_id=page_id, ns=ns, title=title, rev_id=rev_id, parent_id=parent_id,
                    timestamp=parse_ts(ts), user=user, user_id=user_id, anon=bool(anon), minor=bool(minor),
                    size=size, sha1=sha1, comment=comment, tags=tuple(json.loads(tags)),
                    content_model=content_model, user_hidden=bool(user_hidden),
                    comment_hidden=bool(comment_hidden), sha1_hidden=bool(sha1_hidden),
                    text_hidden=bool(text_hidden))
