"""Apply cassandra/schema.cql under a chosen keyspace name and replication.

The file names one keyspace (the local default); this module rewrites that name and the replication
map, then runs the statements one by one. DDL cannot be prepared, so the keyspace name is validated
instead of being bound.
"""
import re
import time
from pathlib import Path
from typing import Mapping

from shared.package_data import package_path

# A wheel installs cassandra/ as the package shared.revisions.cql (pyproject.toml, package-dir).
INSTALLED_SCHEMA = "cql/schema.cql"
CHECKOUT_SCHEMA = "cassandra/schema.cql"
SCHEMA_PATH = package_path("shared.revisions", INSTALLED_SCHEMA, CHECKOUT_SCHEMA)
DDL_TIMEOUT_S = 60.0
# On a ring, a statement right after CREATE KEYSPACE may reach a node that has not applied the keyspace yet
# (the driver's wait for schema agreement gives up silently): such a statement is sent again, this many times
DDL_ATTEMPTS = 10
DDL_RETRY_S = 1.0
# revisions by id, one partition per revision, as keyspaces made before revisions_by_id_block hold them
LEGACY_IDS = "revisions_by_id"
COPY_CHUNK = 5000               # legacy rows read per page and written per round
_KEYSPACE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")
_CREATE_KEYSPACE = re.compile(
    r"^CREATE\s+KEYSPACE\s+IF\s+NOT\s+EXISTS\s+(\w+)\s+WITH\s+replication\s*=\s*\{[^}]*\}", re.I)


def split_statements(text: str) -> list[str]:
    """CQL statements of a script without `--` and `//` comments; quotes may contain ';' or '--'."""
    statements, current, quote, i = [], [], None, 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif text.startswith(("--", "//"), i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif ch == ";":
            statements.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    statements.append("".join(current).strip())
    return [s for s in statements if s]


def replication_map(replication: int | Mapping[str, object], datacenters: list[str]) -> str:
    """CQL map literal. An int is a replication factor in every datacenter the cluster reports
    (NetworkTopologyStrategy); a mapping is used as given and must name its 'class'."""
    if isinstance(replication, int):
        if replication < 1 or not datacenters:
            raise ValueError(f"replication: need a factor >= 1 and a datacenter, "
                             f"got {replication} {datacenters}")
        options = {"class": "NetworkTopologyStrategy", **{dc: replication for dc in sorted(datacenters)}}
    else:
        options = dict(replication)
        if "class" not in options:
            raise ValueError("replication: a mapping must name its 'class'")
    return "{" + ", ".join(f"'{k}': '{v}'" for k, v in options.items()) + "}"


def render(text: str, keyspace: str, replication_literal: str) -> list[str]:
    """The script's statements with its keyspace renamed and its replication replaced."""
    if not _KEYSPACE_NAME.match(keyspace):
        raise ValueError(f"keyspace: {keyspace!r} is not a valid keyspace name")
    statements = split_statements(text)
    found = _CREATE_KEYSPACE.match(statements[0]) if statements else None
    if not found:
        raise ValueError("schema: the first statement must be "
                         "CREATE KEYSPACE IF NOT EXISTS <name> WITH replication")
    source = found.group(1)
    out = [f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {replication_literal}"
           + statements[0][found.end():]]
    qualified = re.compile(rf"\b{re.escape(source)}\.")
    out += [qualified.sub(f"{keyspace}.", s) for s in statements[1:]]
    return out


def apply_schema(session, keyspace: str = "blackwidow", replication: int | Mapping[str, object] = 1,
                 path: Path = SCHEMA_PATH) -> int:
    """Create the keyspace (if absent) and every table (if absent), then copy a legacy revisions_by_id into
    revisions_by_id_block (copy_legacy_ids); the rows copied. Safe to run again; an existing keyspace keeps its
    replication (change that with ALTER KEYSPACE)."""
    datacenters = sorted({h.datacenter for h in session.cluster.metadata.all_hosts() if h.datacenter})
    literal = replication_map(replication, datacenters)
    for statement in render(Path(path).read_text(encoding="utf-8"), keyspace, literal):
        execute_ddl(session, statement)
    return copy_legacy_ids(session, keyspace)


def copy_legacy_ids(session, keyspace: str, *, chunk: int = COPY_CHUNK) -> int:
    """Copy every row of the keyspace's legacy revisions_by_id, if it has one, into revisions_by_id_block; the rows
    copied. The same cells each time: run it again after the last spawn writing the old table was upgraded, then
    drop the old table."""
    from cassandra.query import SimpleStatement

    from shared.revisions.cassandra_store import CassandraRevisionStore

    found = session.cluster.metadata.keyspaces.get(keyspace)
    if found is None or LEGACY_IDS not in found.tables:
        return 0
    store = CassandraRevisionStore(session, keyspace)       # its own statement and batching for the new table
    scan = SimpleStatement(f"SELECT wiki, rev_id, page_id, rev_ts, size FROM {keyspace}.{LEGACY_IDS}",
                           fetch_size=chunk)
    copied = 0
    rows: list[tuple] = []
    for row in session.execute(scan, timeout=DDL_TIMEOUT_S):
        rows.append(tuple(row))
        if len(rows) == chunk:
            copied += store.copy_ids(rows)
            rows = []
    return copied + store.copy_ids(rows)


def execute_ddl(session, statement: str, *, sleep=time.sleep) -> None:
    """One schema statement, sent again while the coordinator does not know the keyspace yet."""
    for attempt in range(1, DDL_ATTEMPTS + 1):
        try:
            session.execute(statement, timeout=DDL_TIMEOUT_S)
            return
        except Exception as exc:     # the driver's InvalidRequest, matched by name: imported only where used
            if type(exc).__name__ != "InvalidRequest" or "doesn't exist" not in str(exc) or attempt == DDL_ATTEMPTS:
                raise
            sleep(DDL_RETRY_S)


def main(argv: list[str] | None = None) -> int:
    """python -m shared.revisions.cql_schema [--hosts H,H] [--port P] [--keyspace K] [--replication N]"""
    import argparse
    import os

    from shared.revisions.cassandra_store import cluster_for

    parser = argparse.ArgumentParser(description="Create the revision keyspace and tables if absent.")
    parser.add_argument("--hosts", default=os.environ.get("BW_CASSANDRA_HOSTS") or "127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("BW_CASSANDRA_PORT") or 9042))
    parser.add_argument("--keyspace", default=os.environ.get("BW_CASSANDRA_KEYSPACE") or "blackwidow")
    parser.add_argument("--replication", type=int, default=1, help="replication factor per datacenter")
    args = parser.parse_args(argv)
    cluster = cluster_for([h.strip() for h in args.hosts.split(",") if h.strip()], args.port)
    try:
        copied = apply_schema(cluster.connect(), args.keyspace, args.replication)
    finally:
        cluster.shutdown()
    print(f"schema applied: keyspace {args.keyspace}, replication {args.replication}")
    if copied:
        print(f"copied {copied:,} rows of {LEGACY_IDS} into revisions_by_id_block; drop {LEGACY_IDS} once no spawn "
              "of the version before writes it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
