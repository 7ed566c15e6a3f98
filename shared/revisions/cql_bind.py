"""Bind many prepared statements at once, serializing each distinct value once.

A multi-page write binds tens of thousands of statements whose values repeat: the wiki in every row, a
revision's id, time, title, user and size in each of its query tables. The driver's bind() serializes every
value of every statement (and builds a column descriptor per value, for column encryption, which the
store does not use); here a value met before under the same CQL type reuses its bytes. No I/O.
"""
import struct
from typing import Any, Sequence

from cassandra.query import BoundStatement, PreparedStatement


class Binder:
    """One per group of statements (the memo lives as long as the Binder)."""

    def __init__(self) -> None:
        # per statement, per column: (CQL type, the memo of that type's values); one memo per type
        self._columns: dict[bytes, list[tuple[Any, dict[Any, bytes]]]] = {}
        self._memos: dict[Any, dict[Any, bytes]] = {}

    def bind(self, prepared: PreparedStatement, values: Sequence[Any]) -> BoundStatement:
        """What prepared.bind(values) returns, for a full sequence of values."""
        columns = prepared.column_metadata
        if prepared.column_encryption_policy is not None or len(values) != len(columns):
            return prepared.bind(values)            # the driver's rules (unset values, encryption)
        columns_memos = self._columns.get(prepared.query_id)
        if columns_memos is None:
            columns_memos = self._columns[prepared.query_id] = [
                (column.type, self._memos.setdefault(column.type, {})) for column in columns]
        version = prepared.protocol_version
        serialized: list[bytes | None] = []
        try:
            for (cql_type, memo), value in zip(columns_memos, values):
                if value is None:
                    serialized.append(None)
                    continue
                try:
                    known = memo.get(value)
                except TypeError:                   # unhashable (a set of ids): not remembered
                    serialized.append(cql_type.serialize(value, version))
                    continue
                if known is None:
                    known = memo[value] = cql_type.serialize(value, version)
                serialized.append(known)
        except (TypeError, struct.error) as exc:    # as the driver reports it
            column = columns[len(serialized)]
            raise TypeError(f"invalid value for column {column.name!r} ({column.type}): {exc}") from exc
        bound = BoundStatement(prepared)
        bound.raw_values = values
        bound.values = serialized
        return bound
