"""Reads that cover many small partitions in one request: `IN ?` lists on the last partition key columns,
bounded so that one request never asks the coordinator for more than MAX_PARTITIONS partitions. Pure: no I/O.

A request per partition costs the Python driver (and the server) far more than the rows it returns, and a
multi-page write reads a few rows from each of thousands of tiny partitions (a page's month counts).
"""
from typing import Collection, Mapping, Sequence, TypeVar

MAX_PARTITIONS = 100                # partitions one read may name (a cross product of two IN lists counts whole)
# a cross product may name partitions nobody asked for (absent ones cost the server a lookup each); at most
# this many per partition asked for
MAX_WASTE = 1.0

T = TypeVar("T")


def chunks(values: Sequence[T], size: int = MAX_PARTITIONS) -> list[Sequence[T]]:
    """`values` in consecutive slices of at most `size`."""
    return [values[i:i + size] for i in range(0, len(values), size)]


def cross_chunks(wanted: Mapping[int, Collection[int]], limit: int = MAX_PARTITIONS,
                 waste: float = MAX_WASTE) -> list[tuple[list[int], list[int]]]:
    """(keys, subkeys) pairs whose cross products cover every wanted (key, subkey), e.g. a page's months, each
    naming at most `limit` partitions of which at most `waste` per wanted one were not asked for. Keys with close
    subkeys share a pair; a key with more than `limit` subkeys is split over several."""
    out: list[tuple[list[int], list[int]]] = []
    keys: list[int] = []
    subkeys: set[int] = set()
    asked = 0
    for key in sorted(wanted, key=lambda k: (min(wanted[k]), max(wanted[k]), k)):
        mine = sorted(set(wanted[key]))
        if len(mine) > limit:
            out += [([key], list(part)) for part in chunks(mine, limit)]
            continue
        union = subkeys.union(mine)
        cells = (len(keys) + 1) * len(union)
        if keys and (cells > limit or cells > (asked + len(mine)) * (1 + waste)):
            out.append((keys, sorted(subkeys)))
            keys, subkeys, asked, union = [], set(), 0, set(mine)
        keys.append(key)
        subkeys = union
        asked += len(mine)
    if keys:
        out.append((keys, sorted(subkeys)))
    return out
