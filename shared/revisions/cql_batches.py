"""Group idempotent upserts into UNLOGGED batches that one replica can apply without forwarding.

The Python driver spends its CPU per request far more than per row, so a write sends as few
requests as Cassandra accepts without complaint: the rows of one partition together (one mutation),
and small partitions together when the same replicas own them, the Spark Cassandra Connector's
`replica_set` grouping. The token-aware policy sends such a batch to one of those replicas. No
I/O here: the caller passes the replica lookup (the driver's token map).
"""
from typing import Callable, Hashable, Sequence

from cassandra.query import BatchStatement, BatchType, BoundStatement

from shared.revisions.cql_bind import Binder

# Cassandra's defaults, kept in tools/cassandra/cassandra.yaml.in and production alike:
# unlogged_batch_across_partitions_warn_threshold = 10, batch_size_warn_threshold = 5KiB. Both
# only apply to batches over more than one partition; below them the server stays silent.
MAX_PARTITIONS = 10
MAX_MULTI_PARTITION_BYTES = 4096        # estimated (see _size); margin under the 5 KiB warning
# One partition's rows per batch: one mutation, exempt from the size warning, but bounded so a
# request stays far below the native transport's frame and the commit log's mutation limit.
MAX_PARTITION_ROWS = 100
MAX_PARTITION_BYTES = 256 * 1024
# Cassandra counts a row as its values plus per-cell timestamps and headers; per column and per
# row it adds less than this (checked against its own batch size warnings).
_CELL_OVERHEAD = 12
_ROW_OVERHEAD = 32

ReplicasOf = Callable[[bytes], Hashable | None]


def batched(statements: Sequence[tuple], replicas_of: ReplicasOf) -> list[tuple]:
    """(statement, params) pairs for execute_concurrent: the same upserts as `statements`
    ((prepared, params) pairs), grouped. `replicas_of(routing_key)` names the replica set owning
    a partition, or None when unknown (then that partition is batched with no other)."""
    by_replicas: dict[Hashable, dict[tuple, list[BoundStatement]]] = {}
    binder = Binder()
    for prepared, params in statements:
        bound = binder.bind(prepared, params)
        key = bound.routing_key
        replicas = replicas_of(key)
        partition = (prepared.query_id, key)
        group = ("alone", partition) if replicas is None else replicas
        by_replicas.setdefault(group, {}).setdefault(partition, []).append(bound)
    out = []
    for partitions in by_replicas.values():
        out += _pack(sorted(partitions.values(), key=len, reverse=True))
    return out


def _pack(partitions: list[list[BoundStatement]]) -> list[tuple]:
    """Greedy, largest partitions first: each batch within the limits above. A partition that fits
    one batch is never split across two: its rows stay one mutation, applied together (a page's
    count, first month and latest pointer, for one)."""
    out: list[tuple] = []
    rows: list[BoundStatement] = []
    keys, size = 0, 0
    for partition in partitions:
        sizes = [_size(bound) for bound in partition]
        if rows and not _fits(len(rows) + len(partition), keys + 1, size + sum(sizes)):
            out.append(_request(rows))
            rows, keys, size = [], 0, 0
        counted = False                 # is this partition among the current batch's `keys`?
        for bound, row_size in zip(partition, sizes):
            after = keys if counted else keys + 1
            if rows and not _fits(len(rows) + 1, after, size + row_size):
                out.append(_request(rows))
                rows, size, after = [], 0, 1
            rows.append(bound)
            size += row_size
            keys, counted = after, True
    if rows:
        out.append(_request(rows))
    return out


def _fits(rows: int, partitions: int, size: int) -> bool:
    if partitions == 1:
        return rows <= MAX_PARTITION_ROWS and size <= MAX_PARTITION_BYTES
    return partitions <= MAX_PARTITIONS and size <= MAX_MULTI_PARTITION_BYTES


def _size(bound: BoundStatement) -> int:
    values = bound.values
    return _ROW_OVERHEAD + _CELL_OVERHEAD * len(values) + sum(map(len, filter(None, values)))


def unlogged(statements: Sequence[tuple]) -> BatchStatement:
    """One UNLOGGED batch of (prepared or bound statement, params) upserts, as they come."""
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    batch.is_idempotent = True          # every row is an upsert of the same cells
    for statement, params in statements:
        batch.add(statement, params)
    return batch


def _request(rows: list[BoundStatement]) -> tuple:
    return (rows[0], None) if len(rows) == 1 else (unlogged([(bound, None) for bound in rows]), None)
