"""Bounded `IN ?` reads over many partitions: which (keys, subkeys) cross products cover what is wanted."""
import pytest

from shared.revisions.cql_in import chunks, cross_chunks


@pytest.mark.parametrize("values, size, expected", [
    ([], 3, []), ([1, 2], 3, [[1, 2]]), ([1, 2, 3, 4, 5, 6, 7], 3, [[1, 2, 3], [4, 5, 6], [7]])])
def test_chunks(values, size, expected):
    assert [list(c) for c in chunks(values, size)] == expected


@pytest.mark.parametrize("wanted, limit, waste, expected", [
    ({}, 100, 1.0, []),
    # keys with the same subkeys share one read
    ({1: {5}, 2: {5}, 3: {5}}, 100, 0.0, [([1, 2, 3], [5])]),
    # no waste allowed: different subkeys never share
    ({1: {5}, 2: {6}}, 100, 0.0, [([1], [5]), ([2], [6])]),
    # waste up to one absent partition per wanted one: 2 keys x 2 subkeys = 4 cells for 2 wanted
    ({1: {5}, 2: {6}}, 100, 1.0, [([1, 2], [5, 6])]),
    ({1: {5}, 2: {6}, 3: {7}}, 100, 1.0, [([1, 2], [5, 6]), ([3], [7])]),
    # the cross product stays within the limit
    ({1: {5, 6}, 2: {5, 6}, 3: {5, 6}}, 4, 0.0, [([1, 2], [5, 6]), ([3], [5, 6])]),
    # a key with more subkeys than the limit is split over several reads
    ({1: set(range(5))}, 2, 1.0, [([1], [0, 1]), ([1], [2, 3]), ([1], [4])]),
    # ordered by first subkey: close keys meet
    ({9: {1}, 2: {8}, 4: {1}}, 100, 0.0, [([4, 9], [1]), ([2], [8])]),
])
def test_cross_chunks(wanted, limit, waste, expected):
    got = cross_chunks(wanted, limit, waste)
    assert got == expected
    covered = {(k, s) for keys, subkeys in got for k in keys for s in subkeys}
    assert all((k, s) in covered for k, subs in wanted.items() for s in subs)
    assert all(len(keys) * len(subkeys) <= limit for keys, subkeys in got)
