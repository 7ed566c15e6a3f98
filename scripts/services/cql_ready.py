"""Wait until a CQL query through the Python driver succeeds; used by cassandra.sh.

usage: cql_ready.py HOST PORT TIMEOUT_S [PID]
Exit 0 and print the release version once `SELECT release_version FROM system.local` answers;
exit 1 on timeout, 2 as soon as PID (the starting JVM) has died.
"""
import logging
import socket
import sys
import time

from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import RoundRobinPolicy


def alive(pid: int | None) -> bool:
    """True while the process runs; a zombie (dead, not yet reaped by its parent) counts as dead."""
    if pid is None:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def query(host: str, port: int) -> str:
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=10)
    # v4 is spoken by every Cassandra since 2.2, so no version negotiation noise in the node's log
    cluster = Cluster([host], port=port, connect_timeout=5, control_connection_timeout=5, protocol_version=4,
                      execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    try:
        return cluster.connect().execute("SELECT release_version FROM system.local").one()[0]
    finally:
        cluster.shutdown()


def main() -> int:
    host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    pid = int(sys.argv[4]) if len(sys.argv) > 4 else None
    logging.basicConfig(level=logging.CRITICAL)   # refused connections while booting are expected
    deadline = time.monotonic() + timeout
    while True:
        if not alive(pid):
            return 2
        try:
            # a plain TCP probe first: the native port opens last, and a driver attempt costs more
            socket.create_connection((host, port), timeout=1).close()
            print(query(host, port))
            return 0
        except (OSError, NoHostAvailable):
            pass
        if time.monotonic() > deadline:
            return 1
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
