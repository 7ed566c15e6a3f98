"""Grouping upserts into unlogged batches by partition and replica set (no server needed: prepared
statements are built from their metadata, as the driver builds them from a PREPARED answer)."""
from cassandra import ProtocolVersion
from cassandra.cqltypes import Int32Type, UTF8Type
from cassandra.protocol import ColumnMetadata
from cassandra.query import BatchStatement, BatchType, BoundStatement, PreparedStatement

from shared.revisions import cql_batches
from shared.revisions.cql_batches import (MAX_MULTI_PARTITION_BYTES, MAX_PARTITION_ROWS, MAX_PARTITIONS,
                                          batched)


def prepared(table: str) -> PreparedStatement:
    """INSERT INTO ks.<table> (k, c, v) VALUES (?, ?, ?) with PRIMARY KEY ((k), c)."""
    columns = [ColumnMetadata("ks", table, name, kind) for name, kind in
               (("k", UTF8Type), ("c", Int32Type), ("v", UTF8Type))]
    query = f"INSERT INTO ks.{table} (k, c, v) VALUES (?, ?, ?)"
    return PreparedStatement(columns, table.encode(), [0], query, "ks", ProtocolVersion.V5, [], None)


BY_KEY, OTHER = prepared("by_key"), prepared("other")


def rows_of(request) -> list[tuple]:
    """(table, partition key) of every row a request carries."""
    statement, params = request
    assert params is None
    if isinstance(statement, BoundStatement):
        return [(statement.prepared_statement.query_id, statement.routing_key)]
    assert statement.batch_type == BatchType.UNLOGGED and statement.is_idempotent
    return [(query_id, values[0]) for _, query_id, values in statement._statements_and_parameters]


def one_replica(key: bytes) -> str:
    return "node-1"


def test_every_row_is_sent_once():
    statements = [(BY_KEY, (f"p{i % 7}", i, "x")) for i in range(60)] + [(OTHER, ("p1", 1, "y"))]
    requests = batched(statements, one_replica)
    sent = sorted(row for r in requests for row in rows_of(r))
    assert sent == sorted((ps.query_id, params[0].encode()) for ps, params in statements)


def test_a_partitions_rows_go_together_up_to_the_row_cap():
    statements = [(BY_KEY, ("one", i, "x")) for i in range(MAX_PARTITION_ROWS + 5)]
    requests = batched(statements, lambda key: None)
    assert [len(rows_of(r)) for r in requests] == [MAX_PARTITION_ROWS, 5]


def test_a_long_single_partition_batch_is_not_held_to_the_multi_partition_size():
    statements = [(BY_KEY, ("one", i, "x" * 1000)) for i in range(20)]
    requests = batched(statements, one_replica)
    assert len(requests) == 1 and isinstance(requests[0][0], BatchStatement)


def test_partitions_on_the_same_replicas_share_a_batch_of_at_most_ten():
    statements = [(BY_KEY, (f"p{i}", i, "x")) for i in range(25)]
    requests = batched(statements, one_replica)
    assert [len({key for key in rows_of(r)}) for r in requests] == [MAX_PARTITIONS, MAX_PARTITIONS, 5]


def test_partitions_of_different_replica_sets_never_share_a_batch():
    owner = {f"p{i}".encode(): ("a", "b", "c") if i % 2 else ("b", "c", "d") for i in range(8)}
    statements = [(BY_KEY, (f"p{i}", i, "x")) for i in range(8)]
    for request in batched(statements, owner.__getitem__):
        assert len({owner[key] for _, key in rows_of(request)}) == 1


def test_an_unknown_replica_set_batches_a_partition_with_no_other():
    statements = [(BY_KEY, (f"p{i % 3}", i, "x")) for i in range(9)]
    requests = batched(statements, lambda key: None)
    assert sorted(len(rows_of(r)) for r in requests) == [3, 3, 3]
    assert all(len(set(rows_of(r))) == 1 for r in requests)


def test_a_multi_partition_batch_stays_under_the_size_warning():
    statements = [(BY_KEY, (f"p{i}", i, "y" * 700)) for i in range(10)]
    requests = batched(statements, one_replica)
    assert len(requests) > 1
    for statement, _ in requests:
        if isinstance(statement, BatchStatement):
            size = sum(cql_batches._size(BY_KEY.bind((key.decode(), 0, "y" * 700)))
                       for _, key in rows_of((statement, None)))
            assert size <= MAX_MULTI_PARTITION_BYTES


def test_a_partition_that_fits_one_batch_is_never_split():
    # three partitions of two ~770-byte rows: the third one's first row still fits under the size
    # warning, its second would not, so it starts a batch of its own
    statements = [(BY_KEY, (f"p{i}", j, "y" * 700)) for i in range(3) for j in range(2)]
    requests = batched(statements, one_replica)
    assert len(requests) == 2
    for key in (b"p0", b"p1", b"p2"):
        assert [rows_of(r).count((BY_KEY.query_id, key)) for r in requests if (BY_KEY.query_id, key) in rows_of(r)] \
            == [2]
