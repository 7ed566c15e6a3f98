"""What the benchmark scripts share: the local services' addresses, markdown tables and goal verdicts,
throwaway PostgreSQL databases and Cassandra keyspaces, starting and stopping the 3-node Cassandra cluster,
processes' CPU readings. No measurement logic here."""
import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator, NamedTuple, Sequence

ROOT = Path(__file__).resolve().parents[1]
LOCAL_WIKI = "http://127.0.0.1:8780/api.php"
SEED_EXPECTED = ROOT / ".run/mediawiki/seed/expected.json.gz"
PG_ADMIN_URL = "postgresql+psycopg2://blackwidow:blackwidow@127.0.0.1:55432/blackwidow"
CASSANDRA_HOSTS = ("127.0.0.1",)
CASSANDRA_PORT = 9042
# the separate 3-node cluster of `scripts/services/cassandra.sh up-cluster` (node n on 127.0.0.<n+1>)
RING_HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
RING_PORT = 9043
USER_AGENT = "BlackWidow-bench/0.1 (https://github.com/blackwidow-harvester; ops@example.org) python-requests"
SECRET = "bench-node-secret"
CASSANDRA_PID = ROOT / ".run/cassandra/cassandra.pid"
CASSANDRA_SH = ROOT / "scripts/services/cassandra.sh"
RING_PIDS = tuple(ROOT / f".run/cassandra-ring/node{n}/cassandra.pid" for n in (1, 2, 3))
LOCAL_WIKI_DIR = ROOT / ".run/mediawiki"


def table(headers: Sequence[str], rows: Sequence[Sequence], right: Sequence[int] = ()) -> str:
    """A markdown table; columns whose index is in `right` are right-aligned (numbers)."""
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(met: bool) -> str:
    return "**met**" if met else "**missed**"


def heading(number: int, title: str) -> str:
    return f"## {number}. {title}\n"


@contextlib.contextmanager
def timer() -> Iterator[list[float]]:
    """`with timer() as t: ...` then t[0] holds the elapsed seconds."""
    out = [0.0]
    start = time.perf_counter()
    try:
        yield out
    finally:
        out[0] = time.perf_counter() - start


def seeded_articles():
    """The local wiki's pages with a history (redirects excluded), from the seed's expectations."""
    from tools.wikigen import load_expected
    return [p for p in load_expected(SEED_EXPECTED).pages if not p.is_redirect]


@contextlib.contextmanager
def pg_database(prefix: str) -> Iterator[str]:
    """URL of a fresh PostgreSQL database, dropped afterwards."""
    import sqlalchemy as sa
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        # autovacuum may be working on a database a benchmark just filled, and FORCE may not end a
        # superuser's worker: try again until it has finished
        for attempt in range(60):
            try:
                with admin.connect() as conn:
                    conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                break
            except sa.exc.ProgrammingError:
                if attempt == 59:
                    raise
                time.sleep(2)
        admin.dispose()


@contextlib.contextmanager
def cassandra_keyspace(prefix: str, hosts: Sequence[str] = CASSANDRA_HOSTS, *, port: int = CASSANDRA_PORT,
                       replication: int = 1) -> Iterator[tuple[object, str]]:
    """(session, keyspace): a fresh keyspace with the revision schema, dropped afterwards."""
    from shared.revisions.cassandra_store import cluster_for
    from shared.revisions.cql_schema import apply_schema
    cluster = cluster_for(list(hosts), port, schema_event_refresh_window=0)
    # a fresh ring on a loaded machine can take longer than the driver's 10 s to agree on a new keyspace
    cluster.max_schema_agreement_wait = 90
    session = cluster.connect()
    keyspace = f"{prefix}_{uuid.uuid4().hex[:8]}"
    apply_schema(session, keyspace, replication)
    try:
        yield session, keyspace
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
        cluster.shutdown()


def group_cpu(pgid: int) -> float:
    """CPU seconds used so far by the live processes of a process group (e.g. gunicorn and its worker)."""
    total = 0.0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = open(os.path.join(entry.path, "stat")).read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def wiki_server_cpu(directory: Path) -> float | None:
    """CPU seconds used so far by a local wiki's PHP server and its workers (scripts/services/mediawiki.sh
    starts it in a process group of its own and records its pid in <directory>/server.pid)."""
    try:
        return group_cpu(int((directory / "server.pid").read_text().strip()))
    except (OSError, ValueError):
        return None


def _pidfile_cpu(pidfile: Path) -> float | None:
    """CPU seconds used so far by the process a pid file names, if it runs."""
    try:
        pid = int(pidfile.read_text().strip())
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def cassandra_cpu() -> float | None:
    """CPU seconds used so far by the local Cassandra (scripts/services/cassandra.sh), if it runs here."""
    return _pidfile_cpu(CASSANDRA_PID)


def ring_cpu() -> float | None:
    """CPU seconds used so far by the 3-node cluster's nodes together, if all three run."""
    each = [_pidfile_cpu(pidfile) for pidfile in RING_PIDS]
    return None if None in each else sum(each)   # type: ignore[arg-type]


@contextlib.contextmanager
def cassandra_ring() -> Iterator[bool]:
    """Starts the 3-node cluster (`cassandra.sh up-cluster`, minutes on 2 cores) and yields whether it came
    up; stops it and deletes its data afterwards, also after a partial start."""
    script = str(CASSANDRA_SH)
    up = subprocess.run([script, "up-cluster"], stdout=sys.stderr, stderr=sys.stderr).returncode == 0
    try:
        yield up
    finally:
        subprocess.run([script, "down-cluster"], stdout=sys.stderr, stderr=sys.stderr)


class Servers(NamedTuple):
    """A Cassandra cluster a spawn can write to: its contact points, CQL port, and a reading of the CPU
    seconds its nodes have used so far."""
    hosts: tuple[str, ...]
    port: int
    cpu: Callable[[], float | None]


SINGLE_NODE = Servers(CASSANDRA_HOSTS, CASSANDRA_PORT, cassandra_cpu)
RING = Servers(RING_HOSTS, RING_PORT, ring_cpu)
