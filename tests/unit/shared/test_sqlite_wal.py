import sqlite3
import threading

import pytest

from shared.sqlite_wal import enable_wal


def _locked_elsewhere(path):
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE IF NOT EXISTS t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_waits_for_another_connection_to_let_go(tmp_path):
    path = str(tmp_path / "w.db")
    holder = _locked_elsewhere(path)
    release = threading.Timer(0.3, holder.rollback)
    release.start()
    # timeout=0: no busy handler at all, so only the retry can get past the lock.
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        enable_wal(conn, timeout_s=5)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        release.join()
        conn.close()
        holder.close()


def test_gives_up_after_the_timeout(tmp_path):
    path = str(tmp_path / "w.db")
    holder = _locked_elsewhere(path)
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            enable_wal(conn, timeout_s=0.2)
    finally:
        conn.close()
        holder.rollback()
        holder.close()
