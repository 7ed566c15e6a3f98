"""The hub API's Prometheus multiprocess directories (one per gunicorn master, under BW_DATA_DIR)."""
import os
import shutil

PREFIX = "prometheus-hub"


def remove_dead_servers_dirs(parent: str) -> None:
    """A server killed -9 never ran on_exit: drop directories whose master pid is gone."""
    for name in os.listdir(parent) if os.path.isdir(parent) else ():
        head, _, pid = name.rpartition(".")
        if head != PREFIX or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        except PermissionError:
            pass    # alive, someone else's
