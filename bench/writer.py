"""Revision write throughput on the local Cassandra: CassandraRevisionStore.write (concurrent, prepared)
against a naive loop running the same statements one by one, and the SQLite store for reference.

    .venv/bin/python -m bench.writer [--revisions 2000] [--batch 500]

Prints a markdown table. Uses a throwaway keyspace, dropped at the end. Not a test: numbers depend on
the machine and whatever else runs on it.
"""
import argparse
import tempfile
import time
import uuid

from shared.revisions.cassandra_store import CassandraRevisionStore, cluster_for
from shared.revisions.cql_schema import apply_schema
from shared.revisions.derived import size_deltas
from shared.revisions.sqlite_store import SQLiteRevisionStore
from tests.revision_store_contract import make_history


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=500, help="revisions per write() call")
    parser.add_argument("--hosts", default="127.0.0.1")
    args = parser.parse_args()

    cluster = cluster_for(args.hosts.split(","), schema_event_refresh_window=0)
    session = cluster.connect()
    keyspace = f"bw_bench_{uuid.uuid4().hex[:8]}"
    apply_schema(session, keyspace, 1)
    results = []
    try:
        store = CassandraRevisionStore(session, keyspace)

        def batches(revisions):
            return [revisions[i:i + args.batch] for i in range(0, len(revisions), args.batch)]

        revisions = make_history("bench-store.example.org", 1, args.revisions)
        statements = sum(len(store._row_statements(r, 0)) for r in revisions)
        seconds = timed(lambda: [store.write(b) for b in batches(revisions)])
        results.append(("Cassandra", f"store.write, {args.batch} per call", seconds, statements))

        # the same row statements, one synchronous execute at a time (no page bookkeeping)
        naive = make_history("bench-naive.example.org", 1, args.revisions)
        deltas = size_deltas(naive, {})
        plan = [s for r in naive for s in store._row_statements(r, deltas[r.rev_id])]
        seconds = timed(lambda: [session.execute(ps, params) for ps, params in plan])
        results.append(("Cassandra", "naive synchronous loop", seconds, len(plan)))

        with tempfile.TemporaryDirectory() as tmp:
            sqlite = SQLiteRevisionStore(f"{tmp}/bench.db")
            local = make_history("bench-sqlite.example.org", 1, args.revisions)
            seconds = timed(lambda: [sqlite.write(b) for b in batches(local)])
            sqlite.close()
        results.append(("SQLite", f"store.write, {args.batch} per call", seconds, args.revisions))
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=60)
        cluster.shutdown()

    print("| backend | method | revisions | seconds | revisions/s | statements/s |")
    print("|---|---|---:|---:|---:|---:|")
    for backend, method, seconds, statements in results:
        print(f"| {backend} | {method} | {args.revisions} | {seconds:.2f} | {args.revisions / seconds:,.0f} "
              f"| {statements / seconds:,.0f} |")


if __name__ == "__main__":
    main()
