"""A census's listing as the stores keep it (RevisionStore.add_listing): per page, its revision ids packed 8 bytes
each, little-endian, in rows keyed by their first id, so that a listing step written again replaces its own rows.
Pure."""
from __future__ import annotations

import sys
from array import array
from typing import Iterable, Sequence

# How long a listing's rows last: a census ends in hours and removes its own, so this clears only what a census cut
# short (its reader died) leaves. Cassandra's census_listing has it as default_time_to_live (cassandra/schema.cql);
# the SQLite store purges by it.
TTL_S = 30 * 86400


def pack(ids: Sequence[int]) -> bytes:
    packed = array("q", ids)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tobytes()


def unpack(blob: bytes) -> array:
    ids = array("q")
    ids.frombytes(blob)
    if sys.byteorder != "little":
        ids.byteswap()
    return ids


def gathered(rows: Iterable[tuple[int, bytes]]) -> dict[int, array]:
    """{page id: its ids} from (page id, packed ids) rows."""
    out: dict[int, array] = {}
    for page_id, blob in rows:
        ids = unpack(blob)
        if page_id in out:
            out[page_id].extend(ids)
        else:
            out[page_id] = ids
    return out
