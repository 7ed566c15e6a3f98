"""spawn.nudge_fetch: the revisions the change feed announced, fetched 50 ids a request across pages, and a source
that starts its next pass from them when they follow on from its resume point (fakes; the whole path runs in
tests/integration/test_change_feed_hub.py)."""
from dataclasses import replace

import pytest

from shared.feed_wire import REVISIONS, VISIBILITY
from spawn.mediawiki import MAX_TITLES, BadResponse, PageInfo
from spawn.metrics import SpawnMetrics
from spawn.nudge_fetch import RevisionFetcher, _Want, chain, rounds
from spawn.source import DataSource
from spawn.subscriber import Subscriber
from tests.unit.spawn.fakes import FakeBatcher, FakeClock, FakeWiki, MemoryStore, make_revisions
from tests.unit.spawn.test_registry import spec

REVS = make_revisions(6)          # rev ids 100..105, each the child of the one before


@pytest.mark.parametrize("resume, ids, expected", [
    (102, [103, 104], [103, 104]),
    (102, [104, 103], [103, 104]),            # any order in, oldest first out
    (102, [104], None),                       # 103 missing between the resume point and 104
    (101, [103], None),
    (102, [], None),
    (105, [103], None),                       # older than the resume point: not a continuation
])
def test_chain_takes_the_revisions_only_when_none_is_missing(resume, ids, expected):
    by_id = {r.rev_id: r for r in REVS}
    got = chain(resume, [by_id[i] for i in ids])
    assert (None if got is None else [r.rev_id for r in got]) == expected


def want(page_id, n, content=False):
    return _Want(PageInfo(page_id, 0, f"P{page_id}", 0), set(range(page_id * 1000, page_id * 1000 + n)), content,
                 ("t",), lambda revs: None)


def test_rounds_pack_fifty_ids_a_request_without_splitting_a_page_and_keep_content_apart():
    wants = [want(1, 30), want(2, 20), want(3, 1), want(4, 5, content=True), want(5, MAX_TITLES + 7)]
    packed = [[w.page.page_id for w in r] for r in rounds(wants)]
    assert packed == [[1, 2], [3], [5], [4]]


def fetcher_for(wiki):
    return RevisionFetcher(wiki, autostart=False)


def test_one_request_brings_the_announced_revisions_of_several_pages():
    other = [replace(r, page_id=8, title="Other", rev_id=r.rev_id + 100, parent_id=r.parent_id + 100 if r.parent_id
                     else 0) for r in REVS]
    wiki = FakeWiki(REVS + other)
    got: dict = {}
    fetcher = fetcher_for(wiki)
    fetcher.fetch("a", PageInfo(7, 0, "Page", 0), [104], content=False, tenants=("t",),
                  deliver=lambda revs: got.setdefault(7, revs))
    fetcher.fetch("a", PageInfo(7, 0, "Page", 0), [105], content=False, tenants=("t",),
                  deliver=lambda revs: got.setdefault(7, revs))        # a second nudge before the round: merged
    fetcher.fetch("b", PageInfo(8, 0, "Other", 0), [205], content=False, tenants=("u",),
                  deliver=lambda revs: got.setdefault(8, revs))
    assert fetcher.fetch_pending() == 1
    assert wiki.calls == [("of_pages", (104, 105, 205), False)]
    assert [r.rev_id for r in got[7]] == [104, 105] and [r.rev_id for r in got[8]] == [205]
    assert fetcher.fetch_pending() == 0


def test_a_failed_request_hands_none_so_the_sources_read_as_before():
    wiki = FakeWiki(REVS)
    wiki.fail = BadResponse("broken")
    got: list = []
    fetcher = fetcher_for(wiki)
    fetcher.fetch("a", PageInfo(7, 0, "Page", 0), [105], content=False, tenants=(), deliver=got.append)
    fetcher.fetch_pending()
    assert got == [None]


def source_with_fetcher(history):
    wiki = FakeWiki(history)
    fetcher = fetcher_for(wiki)
    src = DataSource(spec().source_uuid, "Page", client=wiki, store=MemoryStore(), batcher=FakeBatcher(),
                     revisit_min_s=60, revisit_max_s=3600, on_limit=lambda s: None, metrics=SpawnMetrics(),
                     now=FakeClock(), fetcher=fetcher)
    sub = Subscriber(spec("a"), seen_at=0)
    src.attach(sub)
    return src, sub, wiki, fetcher


def test_a_nudged_page_stores_the_fetched_revisions_without_a_history_request_of_its_own():
    src, sub, wiki, fetcher = source_with_fetcher(REVS[:4])
    src.run_once()
    wiki.history = list(REVS)                        # two edits: 104, 105
    wiki.calls.clear()
    src.nudge(REVISIONS, [104])
    src.nudge(REVISIONS, [105])
    assert not src.settled
    fetcher.fetch_pending()
    src.run_once()
    assert sub.status().revisions == 6 and src.settled and src.complete
    assert [c[0] for c in wiki.calls] == ["of_pages"]


def test_a_gap_in_what_was_fetched_reads_the_history_as_before():
    src, sub, wiki, fetcher = source_with_fetcher(REVS[:4])
    src.run_once()
    wiki.history = list(REVS)
    wiki.calls.clear()
    src.nudge(REVISIONS, [105])                      # 104's change not reported yet
    fetcher.fetch_pending()
    src.run_once()
    assert sub.status().revisions == 6 and src.settled
    assert [c[0] for c in wiki.calls] == ["of_pages", "revisions"]


def test_other_nudges_and_pages_not_caught_up_wake_the_source_as_before():
    src, sub, wiki, fetcher = source_with_fetcher(REVS[:4])
    src.nudge(REVISIONS, [104])                      # not caught up yet: nothing to continue from
    src.run_once()
    assert fetcher.fetch_pending() == 0
    src.nudge(VISIBILITY, [101])
    assert fetcher.fetch_pending() == 0
