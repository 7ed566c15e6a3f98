"""Metrics directories of hub servers killed -9 are removed when the next server starts."""
import os
import subprocess
import sys

from blackwidow.metrics_dir import remove_dead_servers_dirs


def test_only_directories_of_dead_servers_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name in (f"prometheus-hub.{dead.pid}", f"prometheus-hub.{os.getpid()}", "prometheus-hub.x", "revisions"):
        (tmp_path / name).mkdir()
    remove_dead_servers_dirs(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"prometheus-hub.{os.getpid()}", "prometheus-hub.x", "revisions"])
