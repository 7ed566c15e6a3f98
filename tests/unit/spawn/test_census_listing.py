"""spawn.census_listing: a census's listing by shard, in memory or spilled to a file per shard."""
import random

import pytest

from shared.census_wire import shard_of
from spawn import census_listing
from spawn.census_listing import Listing


def listed_pages(seed: int) -> list[dict[int, list[int]]]:
    """Listing answers as allrevisions gives them: a page's ids spread over many answers."""
    rng = random.Random(seed)
    revs = [(rng.randrange(1, 400), rev_id) for rev_id in range(1, 5001)]
    answers = []
    for start in range(0, len(revs), 500):
        answer: dict[int, list[int]] = {}
        for page_id, rev_id in revs[start:start + 500]:
            answer.setdefault(page_id, []).append(rev_id)
        answers.append(answer)
    return answers


@pytest.mark.parametrize("spilled", [False, True])
def test_each_shard_holds_exactly_the_ids_of_its_pages(tmp_path, monkeypatch, spilled):
    monkeypatch.setattr(census_listing, "FLUSH_PAIRS", 700)       # flushed several times on the way
    answers = listed_pages(3)
    listing = Listing(8, tmp_path if spilled else None)
    for answer in answers:
        listing.add(answer)
    expect: dict[int, dict[int, list[int]]] = {s: {} for s in range(8)}
    for answer in answers:
        for page_id, ids in answer.items():
            expect[shard_of(page_id, 8)].setdefault(page_id, []).extend(ids)
    for shard in range(8):
        got = listing.shard(shard)
        assert {p: sorted(ids) for p, ids in got.items()} == {p: sorted(ids) for p, ids in expect[shard].items()}
        assert listing.shard(shard).keys() == got.keys()          # read again: the same (a step taken again)
    if spilled:
        assert listing.directory is not None and len(list(listing.directory.iterdir())) == 8
    listing.close()
    assert list(tmp_path.iterdir()) == []


def test_leftovers_of_a_crash_are_cleared_and_nothing_else(tmp_path):
    left = Listing(4, tmp_path)
    left.add({7: [70, 71]})
    left.shard(0)
    kept = tmp_path / "other"
    kept.mkdir()
    census_listing.clear(tmp_path)
    assert list(tmp_path.iterdir()) == [kept]
