"""What a source does with the change feed's nudges (shared.feed_wire kinds), when it reports itself settled,
and how a spawn turns feed events into changes and keeps them until the hub acknowledges them
(spawn.feed_changes, spawn.feed_buffer: pure tables). Fakes only; tests/integration/test_change_feed_hub.py
runs the whole path on the writable wiki."""
from datetime import datetime, timedelta, timezone

import pytest

from dataclasses import replace

from shared.feed_wire import (CHECK, HIDE, HISTORY, REVISIONS, VISIBILITY, FeedChange, FeedDuty, FeedGap, FeedReport,
                              Nudge)
from shared.hashing import source_uuid
from shared.wire import Poll, StatusReport
from spawn import feed_buffer
from spawn.feed_changes import changes_of, merged
from spawn.feed_events import (HistoryMerged, Imported, NewRevision, PageCreated, PageDeleted, PageMoved,
                               PageRestored, VisibilityChanged)
from spawn.feed_position import FeedPosition
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.source import DataSource
from spawn.subscriber import Subscriber
from tests.unit.spawn.fakes import FakeBatcher, FakeClock, FakeWiki, MemoryStore, make_revisions
from tests.unit.spawn.test_history_check import EVERY, checks, imported
from tests.unit.spawn.test_registry import spec

T = datetime(2026, 11, 24, 7, 0, 0, tzinfo=timezone.utc)


def source(followed: bool = False):
    clock, store, metrics, batcher = FakeClock(), MemoryStore(), SpawnMetrics(), FakeBatcher()
    wiki = FakeWiki(make_revisions(20))
    src = DataSource(spec().source_uuid, "Page", client=wiki, store=store, batcher=batcher, revisit_min_s=60,
                     revisit_max_s=EVERY, on_limit=lambda s: None, metrics=metrics, now=clock,
                     followed=lambda: followed)
    sub = Subscriber(spec("a"), seen_at=0)
    src.attach(sub)
    return src, sub, wiki, store, clock, metrics, batcher


def test_a_history_nudge_compares_the_history_now_not_one_interval_later():
    src, sub, wiki, store, clock, metrics, _ = source()
    src.run_once()
    imported(wiki, 3)
    src.run_once()              # no nudge: the comparison is an interval away, the import unseen
    assert sub.status().revisions == 20
    src.nudge(HISTORY)
    assert not src.settled
    src.run_once()
    assert sub.status().revisions == 23 and checks(metrics, "repaired") == 1 and src.settled


def test_a_source_is_settled_only_once_a_pass_began_after_its_last_nudge():
    src, sub, wiki, *_ = source()
    assert not src.settled                          # not caught up yet
    src.run_once()
    assert src.settled and sub.status(settled=src.settled).settled is True
    src.nudge(REVISIONS)
    assert not src.settled
    src.run_once()
    assert src.settled


def test_a_check_nudge_asks_the_revisit_batcher_at_once_without_a_history_request():
    src, sub, wiki, store, clock, metrics, batcher = source()
    src.run_once()
    asked = len(wiki.calls)
    src.nudge(CHECK)
    src.run_once()
    assert len(wiki.calls) == asked and batcher.scheduled[src.key][2] == 0.0


@pytest.mark.parametrize("followed, expected", [(False, "its own rate"), (True, "the longest interval")])
def test_a_followed_wiki_revisits_its_pages_only_as_a_safety_net(followed, expected):
    src, *_, batcher = source(followed)
    src.run_once()
    delay, every = batcher.scheduled[src.key][2:]
    assert (delay == every == EVERY) == followed, expected


def test_the_registry_passes_nudges_by_page_key_and_checks_to_every_source_of_the_wiki():
    made: list[DataSource] = []
    nudged: list[tuple[str, str]] = []

    class Recording(DataSource):
        def nudge(self, kind, rev_ids=(), hide=()):
            nudged.append((self.title, kind, *((hide,) if hide else ())))

        def start(self):
            pass

    def factory(s, on_limit):
        src = Recording(s.source_uuid, s.title, client=FakeWiki([]), store=MemoryStore(), batcher=FakeBatcher(),
                        revisit_min_s=60, revisit_max_s=EVERY, on_limit=on_limit)
        made.append(src)
        return src

    registry = Registry(factory, orphan_after_s=60)
    a, b = spec("a", title="Apple"), spec("b", title="Pear")
    registry.upsert(a)
    registry.upsert(b)
    hide = ((5, ("content",)),)
    assert registry.nudge([Nudge(a.wiki, HISTORY, str(source_uuid(a.wiki, "Apple")), (), hide),
                           Nudge(a.wiki, REVISIONS, str(source_uuid(a.wiki, "Plum")))]) == 1
    assert nudged == [("Apple", HISTORY, hide)]
    assert registry.nudge([Nudge(a.wiki, CHECK)]) == 2
    assert sorted(nudged[1:]) == [("Apple", CHECK), ("Pear", CHECK)]


def change_fields(rcid: int, title: str = "Apple") -> dict:
    return {"rcid": rcid, "timestamp": T + timedelta(seconds=rcid), "page_id": 7, "ns": 0, "title": title}


def at(rcid: int) -> str:
    return FeedPosition(T + timedelta(seconds=rcid), rcid).token


EVENTS = [
    (NewRevision(**change_fields(1), rev_id=10, parent_id=9), [("Apple", REVISIONS)]),
    (PageCreated(**change_fields(1), rev_id=10, parent_id=0), [("Apple", REVISIONS)]),
    (PageMoved(**change_fields(1), new_ns=0, new_title="Apple (fruit)", redirect_left=True, rev_id=11),
     [("Apple", REVISIONS), ("Apple (fruit)", REVISIONS)]),
    (PageDeleted(**change_fields(1)), [("Apple", REVISIONS)]),
    (PageRestored(**change_fields(1), revisions=3), [("Apple", HISTORY)]),
    (VisibilityChanged(**change_fields(1), rev_ids=(10,), hidden_before=frozenset(),
                       hidden_after=frozenset({"content"}), suppressed=False), [("Apple", HIDE)]),
    (VisibilityChanged(**change_fields(1), rev_ids=(10,), hidden_before=frozenset({"content"}),
                       hidden_after=frozenset(), suppressed=False), [("Apple", VISIBILITY)]),
    (HistoryMerged(**change_fields(1), dest_ns=0, dest_title="Pear", merge_point=T),
     [("Apple", HISTORY), ("Pear", HISTORY)]),
    (Imported(**change_fields(1), source="upload", revisions=2, rev_id=12), [("Apple", HISTORY)]),
]


@pytest.mark.parametrize("event, expected", EVENTS, ids=[type(e).__name__ for e, _ in EVENTS])
def test_each_event_names_the_titles_whose_sources_must_act(event, expected):
    assert [(c.title, c.kind) for c in changes_of(event)] == expected
    assert all(c.at == at(1) and c.page_id == 7 for c in changes_of(event))


def test_an_edit_names_its_revision_and_merged_edits_name_them_all_unless_one_named_none():
    assert [c.rev_ids for c in changes_of(NewRevision(**change_fields(1), rev_id=10, parent_id=9))] == [(10,)]
    assert [c.rev_ids for c in changes_of(PageDeleted(**change_fields(1)))] == [()]
    edits = [*changes_of(edit(1)), *changes_of(edit(2))]
    assert [(c.kind, c.rev_ids) for c in merged(edits)] == [(REVISIONS, (101, 102))]
    moved = changes_of(PageMoved(**change_fields(3), new_ns=0, new_title="Apple (fruit)", redirect_left=True,
                                 rev_id=11))
    assert [(c.title, c.rev_ids) for c in merged([*edits, *moved])] == [("Apple", ()), ("Apple (fruit)", ())]
    assert [c.rev_ids for c in merged([*moved[:1], *edits])] == [()]


def test_changes_merge_to_one_per_title_at_its_newest_entry_of_the_kind_that_does_what_all_ask():
    got = merged([FeedChange("Apple", HISTORY, at(1)), FeedChange("Pear", REVISIONS, at(2)),
                  FeedChange("Apple", REVISIONS, at(3))])
    assert got == [FeedChange("Pear", REVISIONS, at(2)), FeedChange("Apple", HISTORY, at(3))]
    hidden = merged([FeedChange("Plum", VISIBILITY, at(1), 7, (10,)), FeedChange("Plum", REVISIONS, at(2)),
                     FeedChange("Plum", VISIBILITY, at(3), 7, (12, 10))])
    assert hidden == [FeedChange("Plum", VISIBILITY, at(3), 7, (10, 12))]
    assert merged([*hidden, FeedChange("Plum", HISTORY, at(4))]) == [FeedChange("Plum", HISTORY, at(4))]


def caught_up_with_a_hidden_revision():
    """A caught-up source whose page's fourth revision the wiki then hid (text and comment)."""
    src, sub, wiki, store, clock, metrics, batcher = source()
    src.run_once()
    target = wiki.history[3]
    wiki.history[3] = replace(target, text_hidden=True, comment=None, comment_hidden=True)
    return src, wiki, store, metrics, target


def test_a_visibility_nudge_reads_only_the_named_revisions_again_and_hides_what_the_wiki_hides():
    src, wiki, store, metrics, target = caught_up_with_a_hidden_revision()
    asked = len(wiki.calls)
    src.nudge(VISIBILITY, [target.rev_id])
    src.run_once()
    calls = wiki.calls[asked:]
    assert ("by_id", (target.rev_id,), False) in calls
    assert not [c for c in calls if c[0] == "revisions" and c[1] is None]      # no listing of the whole history
    stored = next(r for r in store.history("wiki.test", 7) if r.rev_id == target.rev_id)
    assert stored.text_hidden and stored.comment_hidden and stored.comment is None
    assert metrics.registry.get_sample_value("bw_spawn_revision_visibility_changes_total",
                                             {"wiki": "wiki.test", "change": "hidden"}) == 1
    assert src.settled


def test_fields_the_feed_says_were_hidden_leave_the_store_before_any_request():
    src, wiki, store, metrics, target = caught_up_with_a_hidden_revision()
    asked = len(wiki.calls)

    def unanswered(*args, **kw):        # waiting for the slot, or the edge refusing: nothing gets through
        raise ConnectionError("the wiki does not answer")
    requests = ("resolve", "page_by_id", "open_history", "continue_history", "revision_batches", "revisions_by_id")
    for name in requests:
        setattr(wiki, name, unanswered)
    src.nudge(VISIBILITY, [target.rev_id], ((target.rev_id, ("comment", "content")),))
    with pytest.raises(ConnectionError):
        src.run_once()
    stored = next(r for r in store.history("wiki.test", 7) if r.rev_id == target.rev_id)
    assert stored.text_hidden and stored.comment_hidden and stored.comment is None and stored.sha1 is None
    assert not stored.user_hidden and stored.user == target.user and target.user     # not named: left as it is
    assert store.content("wiki.test", target.rev_id) is None
    assert metrics.registry.get_sample_value("bw_spawn_revision_visibility_changes_total",
                                             {"wiki": "wiki.test", "change": "hidden"}) == 1
    # the re-read of the named revisions still follows, once the wiki answers
    for name in requests:
        delattr(wiki, name)
    src.run_once()
    assert ("by_id", (target.rev_id,), False) in wiki.calls[asked:]


def test_a_visibility_event_hides_only_what_the_action_newly_hid_and_reads_again_only_for_what_it_showed():
    event = VisibilityChanged(**change_fields(5), rev_ids=(12, 10, 12), hidden_before=frozenset({"user"}),
                              hidden_after=frozenset({"user", "content", "comment"}), suppressed=False)
    hides = ((10, ("comment", "content")), (12, ("comment", "content")))
    assert changes_of(event) == [FeedChange("Apple", HIDE, at(5), 7, (), hides)]
    shown = replace(event, hidden_before=frozenset({"content"}), hidden_after=frozenset())
    assert changes_of(shown) == [FeedChange("Apple", VISIBILITY, at(5), 7, (10, 12))]
    swapped = replace(event, hidden_before=frozenset({"content"}), hidden_after=frozenset({"comment"}))
    assert changes_of(swapped) == [FeedChange("Apple", VISIBILITY, at(5), 7, (10, 12),
                                              ((10, ("comment",)), (12, ("comment",))))]
    both = merged([*changes_of(event), FeedChange("Apple", HIDE, at(6), 7, (), ((10, ("user",)),))])
    assert both == [FeedChange("Apple", HIDE, at(6), 7, (), ((10, ("comment", "content", "user")), hides[1]))]
    # a hide never weakens what another change of the page asks: a move still reads on, with the hides
    moved = merged([*changes_of(event), FeedChange("Apple", REVISIONS, at(7), 7)])
    assert moved == [FeedChange("Apple", REVISIONS, at(7), 7, (), hides)]
    # and names no revision: an edit's id before or after it still travels
    hide, = changes_of(event)
    after = merged([hide, FeedChange("Apple", REVISIONS, at(8), 7, (30,))])
    before = merged([FeedChange("Apple", REVISIONS, at(4), 7, (30,)), hide])
    assert after == [FeedChange("Apple", REVISIONS, at(8), 7, (30,), hides)]
    assert before == [FeedChange("Apple", REVISIONS, at(5), 7, (30,), hides)]


def test_a_hide_nudge_on_a_caught_up_page_asks_the_wiki_nothing():
    src, sub, wiki, store, clock, metrics, _ = source()
    src.run_once()
    target = wiki.history[5]
    asked = len(wiki.calls)
    src.nudge(HIDE, (), ((target.rev_id, ("user",)),))
    assert not src.settled
    src.run_once()
    assert wiki.calls[asked:] == []
    stored = next(r for r in store.history("wiki.test", 7) if r.rev_id == target.rev_id)
    assert stored.user_hidden and stored.user is None and stored.user_id is None
    assert src.settled


def edit(rcid: int, title: str = "Apple") -> NewRevision:
    return NewRevision(**change_fields(rcid, title), rev_id=100 + rcid, parent_id=0)


def test_a_reader_keeps_what_it_read_until_the_hub_acknowledges_it():
    start = FeedPosition(T, 0)
    buf = feed_buffer.after_read(feed_buffer.start(start), [edit(1), edit(2, "Pear")], FeedPosition.parse(at(2)),
                                 more=False, now=T + timedelta(seconds=30))
    report = feed_buffer.report(buf)
    assert report.since == start.token and report.position == at(2)
    assert [c.title for c in report.changes] == ["Apple", "Pear"]
    assert report.covered_to == (T + timedelta(seconds=30)).isoformat()
    acked = feed_buffer.acknowledge(buf, FeedPosition.parse(at(1)))
    assert [c.title for c in acked.changes] == ["Pear"] and acked.position == buf.position
    assert feed_buffer.acknowledge(acked, FeedPosition.parse(at(1))) is acked     # the same duty again


# acknowledged position as the hub sends it, expected (base, position) of the buffer after it
ACKS = [
    ("within what was read", at(1), (at(1), at(3))),
    ("before what the buffer kept: the hub lost a report or restarted", None, (None, None)),
    ("past what this reader read: another reader went further", at(9), (at(9), at(9))),
]


@pytest.mark.parametrize("why, acked, expected", ACKS, ids=[a[0] for a in ACKS])
def test_an_acknowledgement_outside_what_was_read_starts_reading_over(why, acked, expected):
    buf = feed_buffer.after_read(feed_buffer.start(FeedPosition.parse(at(0))), [edit(1), edit(3)],
                                 FeedPosition.parse(at(3)), more=False, now=T)
    after = feed_buffer.acknowledge(buf, None if acked is None else FeedPosition.parse(acked))
    token = (lambda p: None if p is None else p.token)
    assert (token(after.base), token(after.position)) == expected


def test_a_report_is_bounded_and_then_vouches_only_for_what_it_carries():
    events = [edit(i, f"Page {i}") for i in range(1, feed_buffer.MAX_REPORTED + 11)]
    buf = feed_buffer.after_read(feed_buffer.start(FeedPosition(T, 0)), events, FeedPosition.parse(at(len(events))),
                                 more=False, now=T + timedelta(hours=1))
    report = feed_buffer.report(buf)
    assert len(report.changes) == feed_buffer.MAX_REPORTED
    assert report.position == report.changes[-1].at
    assert report.covered_to == FeedPosition.parse(report.position).timestamp.isoformat()


def test_a_bounded_report_never_ends_between_changes_of_one_place():
    """Suppression log entries of one second share a place: a cut among them would report a position that
    vouches for the ones left out, which the hub would then skip."""
    n = feed_buffer.MAX_REPORTED
    events = [edit(i, f"Page {i}") for i in range(1, n - 1)]
    shared = FeedPosition(T + timedelta(seconds=n), 0)
    events += [replace(edit(n, f"Hidden {k}"), timestamp=shared.timestamp, rcid=0) for k in range(4)]
    buf = feed_buffer.after_read(feed_buffer.start(FeedPosition(T, 0)), events, shared, more=False, now=T)
    report = feed_buffer.report(buf)
    assert len(report.changes) == n - 2 and report.position == report.changes[-1].at < shared.token
    # acknowledged there, the four of one place are all kept for the next report
    after = feed_buffer.acknowledge(buf, FeedPosition.parse(report.position))
    assert [c.title for c in feed_buffer.report(after).changes] == [f"Hidden {k}" for k in range(4)]


def test_a_gap_is_reported_until_acknowledged_past_it():
    buf = feed_buffer.start(FeedPosition(T, 5))
    gap = FeedGap(T.isoformat(), (T + timedelta(days=1)).isoformat())
    resume = FeedPosition(T + timedelta(days=1), 40)
    buf = feed_buffer.after_gap(buf, gap, resume)
    assert feed_buffer.report(buf).gaps == (gap,) and buf.position == resume
    assert feed_buffer.report(feed_buffer.acknowledge(buf, resume)).gaps == ()


def test_feed_shapes_travel_both_ways_and_bad_ones_name_their_field():
    poll = Poll(node_id="n", feeds={"http://w/api.php": FeedDuty("20261124070000|1", 10.0, "w", ("t",))},
                changes=(Nudge("http://w/api.php", HISTORY, "k"), Nudge("http://w/api.php", CHECK),
                         Nudge("http://w/api.php", VISIBILITY, "k2", (5, 6), ((5, ("comment", "content")),))),
                followed=("http://w/api.php",))
    assert Poll.from_dict(poll.to_dict()) == poll
    report = StatusReport(node_id="n", boot_id="b", attached=True, feeds={"http://w/api.php": FeedReport(
        since=None, position=at(2), changes=(FeedChange("Apple", REVISIONS, at(2), 7),
                                             FeedChange("Pear", VISIBILITY, at(2), 8, (3,), ((3, ("user",)),))),
        covered_to=T.isoformat(), gaps=(FeedGap(T.isoformat(), None),), requests=3)})
    assert StatusReport.from_dict(report.to_dict()) == report
    from shared.errors import ValidationError
    for body, field in [({"node_id": "n", "changes": [{"wiki": "w", "kind": "later"}]}, "changes"),
                        ({"node_id": "n", "feeds": {"w": {"interval_s": 0}}}, "feeds"),
                        ({"node_id": "n", "changes": [{"wiki": "w", "kind": "history"}]}, "changes"),
                        ({"node_id": "n", "changes": [{"wiki": "w", "kind": "visibility", "key": "k",
                                                       "rev_ids": ["5"]}]}, "changes"),
                        ({"node_id": "n", "changes": [{"wiki": "w", "kind": "visibility", "key": "k",
                                                       "hide": {"x5": ["content"]}}]}, "changes"),
                        ({"node_id": "n", "changes": [{"wiki": "w", "kind": "visibility", "key": "k",
                                                       "hide": {"5": ["sha1"]}}]}, "changes")]:
        with pytest.raises(ValidationError) as caught:
            Poll.from_dict(body)
        assert caught.value.field == field
