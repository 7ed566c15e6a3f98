"""Put an SQLite file in WAL mode when several processes may open it at the same moment."""
import sqlite3
import time

RETRY_PAUSE_S = 0.02


def enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switching to WAL needs an exclusive lock, and SQLite answers "database is locked" at once,
    without calling its busy handler, while another process holds that lock (opening or switching
    the same file); so retry here for as long as the busy timeout would have waited."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(RETRY_PAUSE_S)
