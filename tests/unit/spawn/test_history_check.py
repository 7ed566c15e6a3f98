"""A caught-up source compares its stored history with the wiki's (spawn.completeness), writes what is missing
and reports `complete`. Fakes only; the real wiki's side is in tests/integration/spawn/test_history_completeness.py."""
from dataclasses import replace
from datetime import timedelta

import pytest

from spawn.metrics import SpawnMetrics
from spawn.source import DataSource
from spawn.subscriber import Subscriber
from tests.unit.spawn.fakes import FakeBatcher, FakeClock, FakeWiki, MemoryStore, make_revisions
from tests.unit.spawn.test_registry import spec

EVERY = 3600.0      # BW_REVISIT_MAX_S


def source(content: bool = False):
    clock, store, metrics = FakeClock(), MemoryStore(), SpawnMetrics()
    wiki = FakeWiki(make_revisions(20))
    src = DataSource(spec().source_uuid, "Page", client=wiki, store=store, batcher=FakeBatcher(),
                     revisit_min_s=60, revisit_max_s=EVERY, on_limit=lambda s: None, metrics=metrics, now=clock)
    sub = Subscriber(spec("a", content=content), seen_at=0)
    src.attach(sub)
    return src, sub, wiki, store, clock, metrics


def checks(metrics: SpawnMetrics, outcome: str) -> float:
    return metrics.registry.get_sample_value("bw_spawn_history_checks_total",
                                             {"wiki": "wiki.test", "outcome": outcome}) or 0


def imported(wiki: FakeWiki, n: int) -> list:
    """`n` revisions with timestamps before every stored one and ids after them, as an import adds them."""
    first = wiki.history[0]
    old = [replace(r, rev_id=500 + i, parent_id=0, timestamp=first.timestamp - timedelta(days=100 - i))
           for i, r in enumerate(make_revisions(n))]
    wiki.history = sorted([*wiki.history, *old], key=lambda r: (r.timestamp, r.rev_id))
    return old


@pytest.mark.parametrize("content", [False, True], ids=["metadata", "content"])
def test_revisions_added_in_the_past_are_found_one_interval_after_catching_up_and_written(content):
    src, sub, wiki, store, clock, metrics = source(content)
    src.run_once()
    assert sub.status().revisions == 20 and src.proven is None
    asked = len(wiki.calls)
    src.run_once()                                  # a revisit before the interval: no listing of the history
    assert len(wiki.calls) - asked == 1 and src.proven is None

    old = imported(wiki, 3)
    clock.advance(EVERY)
    src.run_once()
    stored = sorted(r.rev_id for r in store.history("wiki.test", 7))
    assert stored == sorted(r.rev_id for r in wiki.history)
    assert src.proven is True and sub.status().revisions == 23
    assert checks(metrics, "repaired") == 1
    assert metrics.registry.get_sample_value("bw_spawn_revisions_repaired_total", {"wiki": "wiki.test"}) == 3
    if content:
        assert [store.content("wiki.test", r.rev_id) for r in old] == [f"text of {r.rev_id}" for r in old]

    clock.advance(EVERY)
    src.run_once()                                  # the next interval: equal, nothing written
    assert checks(metrics, "equal") == 1 and src.proven is True


def test_stored_revisions_the_wiki_no_longer_shows_leave_the_page_unproven():
    src, sub, wiki, store, clock, metrics = source()
    src.run_once()
    wiki.history = wiki.history[:5] + wiki.history[6:]      # one revision deleted on the wiki
    clock.advance(EVERY)
    src.run_once()
    assert src.proven is False and checks(metrics, "differs") == 1
    assert len(list(store.history("wiki.test", 7))) == 20   # not removed here


def test_a_source_not_caught_up_plans_no_check():
    src, sub, wiki, store, clock, metrics = source()
    assert src._until_check() is None
    src.run_once()
    assert src._until_check() == EVERY
    clock.advance(EVERY + 5)
    assert src._until_check() == 0.0


def test_the_check_timer_lists_the_history_without_asking_for_new_revisions():
    src, sub, wiki, store, clock, metrics = source()
    src.run_once()
    clock.advance(EVERY)
    asked = len(wiki.calls)
    src.run_once(check_only=True)
    assert wiki.calls[asked:] == [("revisions", None, False)] and checks(metrics, "equal") == 1
