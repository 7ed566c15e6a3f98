"""4. Writer: revision write throughput on the local Cassandra: CassandraRevisionStore.write (concurrent,
prepared, rows grouped into unlogged batches by partition and replica set) against a naive loop running
the same row statements one by one, and the SQLite store for reference. The store runs before and after
the naive loop; the ratio uses their mean. CPU seconds of this process (the driver) and of the Cassandra
server are measured too.

    .venv/bin/python -m bench.writer [--revisions 4000] [--batch 500]

Prints a markdown table. Uses a throwaway keyspace, dropped at the end. Not a test: numbers depend on
the machine and whatever else runs on it.
"""
import argparse
import resource
import tempfile
import time

from bench.common import cassandra_cpu, cassandra_keyspace, heading, table, verdict
from shared.revisions.cassandra_store import CassandraRevisionStore
from shared.revisions.cql_batches import batched
from shared.revisions.derived import size_deltas
from shared.revisions.sqlite_store import SQLiteRevisionStore
from tests.revision_store_contract import make_history

GOAL = 5.0


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measured(fn) -> tuple[float, float, float | None]:
    """(wall seconds, client CPU seconds, server CPU seconds or None) of fn()."""
    wall, cpu, server = time.perf_counter(), _client_cpu(), cassandra_cpu()
    fn()
    after = cassandra_cpu()
    return (time.perf_counter() - wall, _client_cpu() - cpu,
            None if server is None or after is None else after - server)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=500, help="revisions per write() call")
    parser.add_argument("--hosts", default="127.0.0.1")
    args = parser.parse_args()
    n = args.revisions

    def batches(revisions):
        return [revisions[i:i + args.batch] for i in range(0, len(revisions), args.batch)]

    results = []
    with cassandra_keyspace("bw_bench", args.hosts.split(",")) as (session, keyspace):
        store = CassandraRevisionStore(session, keyspace)
        statements = 0

        def store_run(label: str, wiki: str) -> None:
            nonlocal statements
            revisions = make_history(wiki, 1, n)
            statements = sum(len(store._row_statements(r, 0)) for r in revisions)
            results.append(("Cassandra", label, statements,
                            *measured(lambda: [store.write(b) for b in batches(revisions)])))

        store_run(f"store.write, {args.batch} per call (before)", "bench-store-1.example.org")
        # the same row statements, one synchronous execute at a time (no page bookkeeping)
        naive = make_history("bench-naive.example.org", 1, n)
        deltas = size_deltas(naive, {})
        plan = [s for r in naive for s in store._row_statements(r, deltas[r.rev_id])]
        # the requests write() sends for those rows (counted apart from the timed runs)
        requests = sum(len(batched([s for r in chunk for s in store._row_statements(r, deltas[r.rev_id])],
                                   store._replicas)) for chunk in batches(naive))
        results.append(("Cassandra", "naive synchronous loop", len(plan),
                        *measured(lambda: [session.execute(ps, params) for ps, params in plan])))
        store_run(f"store.write, {args.batch} per call (after)", "bench-store-2.example.org")

        with tempfile.TemporaryDirectory() as tmp:
            sqlite = SQLiteRevisionStore(f"{tmp}/bench.db")
            local = make_history("bench-sqlite.example.org", 1, n)
            results.append(("SQLite", f"store.write, {args.batch} per call", n,
                            *measured(lambda: [sqlite.write(b) for b in batches(local)])))
            sqlite.close()

    naive_wall = results[1][3]
    store_wall = (results[0][3] + results[2][3]) / 2
    ratio = naive_wall / store_wall
    rows = [(backend, method, n, f"{wall:.2f}", f"{n / wall:,.0f}", f"{count / wall:,.0f}",
             f"{cpu:.2f}", "-" if server is None else f"{server:.2f}", f"{naive_wall / wall:.1f}x")
            for backend, method, count, wall, cpu, server in results]
    print(heading(4, "Writer: revisions/s into Cassandra"))
    print(f"{n:,} generated revisions of one page per run, in a throwaway keyspace (replication 1): the "
          f"store's write() ({args.batch} per call: the row statements grouped into unlogged batches, a "
          "partition's rows together and small partitions owned by the same replicas together, run "
          f"concurrently, {len(plan) / n:.1f} statements in {requests / n:.2f} requests per revision; then "
          "the page's counters and resume pointer) against the same row statements executed one at a time, "
          "synchronously. The SQLite store is the embedded default, for reference. CPU: seconds used by this "
          "process (the driver) and by the Cassandra server during each run.\n")
    print(table(("backend", "method", "revisions", "seconds", "revisions/s", "row statements/s",
                 "client CPU s", "Cassandra CPU s", "÷ naive"), rows, right=range(2, 9)))
    print(f"\nGoal ≥ {GOAL:.0f}x the naive loop: {ratio:.1f}x (mean of the two store runs) — "
          f"{verdict(ratio >= GOAL)}.")
    store_runs = [results[0], results[2]]
    if ratio < GOAL and all(r[5] is not None for r in store_runs):
        wall = sum(r[3] for r in store_runs)
        client, server = sum(r[4] for r in store_runs) / wall, sum(r[5] for r in store_runs) / wall
        per_revision = 1e6 * sum(r[4] for r in store_runs) / (2 * n)
        print(f"\nWhy: the store's write is bound by this process's CPU. During the store runs the driver "
              f"used {client:.0%} of a core (one Python process: the GIL gives it one core at most) and the "
              f"Cassandra server {server:.0%}; the naive loop instead waits a round trip per statement "
              f"({1000 * naive_wall / len(plan):.2f} ms over loopback). So the ratio is capped by the "
              f"driver's CPU per revision ({per_revision:.0f} µs) against that round trip, whatever the "
              f"concurrency. On separate hosts the naive loop pays a real network round trip per statement "
              f"and the store's concurrent writes do not, so the ratio grows with the latency. Closing it on "
              f"this box means less driver work per revision: the rows already travel "
              f"{len(plan) / requests:.0f} to a request, as many as Cassandra's default batch warning "
              f"thresholds allow (10 partitions, 5 KiB); what remains is mostly binding about 60 values per "
              f"revision across the five query tables. Larger batches (raised thresholds), fewer "
              f"denormalised columns, or writing from more than one process would close it.")


if __name__ == "__main__":
    main()
