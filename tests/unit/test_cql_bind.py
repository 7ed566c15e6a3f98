"""Binding with each distinct value serialized once gives the driver's own bytes (no server needed: the
prepared statement is built from its metadata, as the driver builds it from a PREPARED answer)."""
from datetime import datetime, timezone

import pytest
from cassandra import ProtocolVersion
from cassandra.cqltypes import BooleanType, BytesType, DateType, Int32Type, LongType, SetType, UTF8Type
from cassandra.protocol import ColumnMetadata
from cassandra.query import PreparedStatement

from shared.revisions.cql_bind import Binder

COLUMNS = (("wiki", UTF8Type), ("rev_id", LongType), ("size", Int32Type), ("anon", BooleanType),
           ("rev_ts", DateType), ("tags", SetType.apply_parameters([UTF8Type])), ("body", BytesType))


def prepared(table: str) -> PreparedStatement:
    columns = [ColumnMetadata("ks", table, name, kind) for name, kind in COLUMNS]
    query = f"INSERT INTO ks.{table} ({', '.join(n for n, _ in COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
    return PreparedStatement(columns, table.encode(), [0], query, "ks", ProtocolVersion.V5, [], None)


TS = datetime(2023, 1, 30, 22, 0, 1, 500_000, tzinfo=timezone.utc)
ROWS = [
    ("w.example.org", 10, 120, False, TS, frozenset({"mobile edit"}), b"\x00\x01"),
    ("w.example.org", 11, 1, True, TS, frozenset(), b""),          # 1 and True in columns of other types
    ("w.example.org", 1, 11, True, TS, {"a", "b"}, None),          # a set (unhashable): serialized each time
    ("ü – 東京", 2**40, -40, False, datetime(2004, 2, 29, tzinfo=timezone.utc), None, bytes(300)),
]


@pytest.mark.parametrize("table", ["one", "other"])
def test_binder_gives_the_drivers_bytes(table):
    binder, statement = Binder(), prepared(table)
    for values in ROWS + ROWS:
        mine, theirs = binder.bind(statement, values), statement.bind(values)
        assert mine.values == theirs.values
        assert (mine.routing_key, mine.keyspace, mine.prepared_statement) == \
            (theirs.routing_key, theirs.keyspace, theirs.prepared_statement)


def test_short_value_lists_keep_the_drivers_rules():
    statement = prepared("short")
    assert Binder().bind(statement, ROWS[0][:3]).values == statement.bind(ROWS[0][:3]).values


def test_a_value_of_the_wrong_type_fails_as_the_driver_does():
    with pytest.raises(TypeError):
        Binder().bind(prepared("bad"), ("w", "not a number", 1, True, TS, None, None))
