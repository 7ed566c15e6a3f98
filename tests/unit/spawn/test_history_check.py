"""A caught-up source compares its stored history with the wiki's (spawn.completeness), writes what is missing
and reports `complete`. Fakes only; the real wiki's side is in tests/integration/spawn/test_history_completeness.py."""
from dataclasses import replace
from datetime import timedelta

import pytest

from spawn.completeness import Hide, visibility
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


def hidden(r, *, text=False, comment=False, user=False):
    """The revision as a listing without content shows it once revision deletion hid these fields."""
    if text:
        r = replace(r, sha1=None, sha1_hidden=True, content=None)
    if comment:
        r = replace(r, comment=None, comment_hidden=True)
    if user:
        r = replace(r, user=None, user_id=None, user_hidden=True)
    return r


REVS = make_revisions(3)
VISIBILITY = [
    # name, stored, on the wiki, fields to remove, revisions to read again
    ("nothing changed", REVS, REVS, (), ()),
    ("a comment and a user hidden", REVS, [REVS[0], hidden(REVS[1], comment=True, user=True), REVS[2]],
     (Hide(REVS[1].rev_id, text=False, comment=True, user=True),), ()),
    ("a text hidden shows as its sha1", REVS, [hidden(REVS[0], text=True), *REVS[1:]],
     (Hide(REVS[0].rev_id, text=True, comment=False, user=False),), ()),
    ("stored with content, text_hidden", [replace(REVS[0], text_hidden=True, sha1=None, sha1_hidden=True)],
     [hidden(REVS[0], text=True)], (), ()),
    ("one more field hidden later", [hidden(REVS[0], comment=True)], [hidden(REVS[0], comment=True, user=True)],
     (Hide(REVS[0].rev_id, text=False, comment=False, user=True),), ()),
    ("shown again", [hidden(REVS[0], text=True, user=True)], [REVS[0]], (), (REVS[0].rev_id,)),
    ("one shown, another hidden at once", [hidden(REVS[0], comment=True)], [hidden(REVS[0], user=True)],
     (Hide(REVS[0].rev_id, text=False, comment=False, user=True),), (REVS[0].rev_id,)),
    ("ids on one side only are the comparison's", REVS[:1], REVS[1:], (), ()),
]


@pytest.mark.parametrize("name, stored, wiki, hide, show", VISIBILITY, ids=[v[0] for v in VISIBILITY])
def test_visibility(name, stored, wiki, hide, show):
    found = visibility(stored, wiki)
    assert (found.hide, found.show) == (hide, show)


def visibility_changes(metrics: SpawnMetrics, change: str) -> float:
    return metrics.registry.get_sample_value("bw_spawn_revision_visibility_changes_total",
                                             {"wiki": "wiki.test", "change": change}) or 0


@pytest.mark.parametrize("content", [False, True], ids=["metadata", "content"])
def test_fields_the_wiki_hides_later_leave_the_store_at_the_next_check_and_come_back_when_shown(content):
    src, sub, wiki, store, clock, metrics = source(content)
    src.run_once()
    a, b = wiki.history[4], wiki.history[5]
    wiki.history[4:6] = [hidden(a, comment=True, user=True), hidden(b, text=True)]
    clock.advance(EVERY)
    src.run_once()
    got_a, got_b = store.rows[("wiki.test", a.rev_id)], store.rows[("wiki.test", b.rev_id)]
    assert (got_a.comment, got_a.user, got_a.comment_hidden, got_a.user_hidden) == (None, None, True, True)
    assert (got_b.sha1, got_b.text_hidden, store.content("wiki.test", b.rev_id)) == (None, True, None)
    assert visibility_changes(metrics, "hidden") == 2 and src.proven is True and sub.status().revisions == 20

    wiki.history[4:6] = [a, b]                      # shown again
    clock.advance(EVERY)
    src.run_once()
    assert store.rows[("wiki.test", a.rev_id)].comment == a.comment
    assert store.rows[("wiki.test", b.rev_id)].sha1 == b.sha1
    if content:
        assert store.content("wiki.test", b.rev_id) == f"text of {b.rev_id}"
    assert visibility_changes(metrics, "shown") == 2 and sub.status().revisions == 20


def test_a_content_repair_reads_only_the_missing_revisions_by_id_not_the_whole_history():
    src, sub, wiki, store, clock, metrics = source(content=True)
    src.run_once()
    old = imported(wiki, 3)
    clock.advance(EVERY)
    asked = len(wiki.calls)
    src.run_once()
    new_calls = wiki.calls[asked:]
    assert [c for c in new_calls if c[0] == "by_id"] == [("by_id", tuple(sorted(r.rev_id for r in old)), True)]
    # the history is listed from its start without content; with content only from the resume point on
    assert not [c for c in new_calls if c[0] == "revisions" and c[1] is None and c[2]]
    assert [store.content("wiki.test", r.rev_id) for r in old] == [f"text of {r.rev_id}" for r in old]
