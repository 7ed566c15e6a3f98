"""The change feed's rules on the hub (blackwidow.feed_plan): who reads each wiki's feed, what a reader's
report becomes, when a position is acknowledged and what the watermark then says. Pure tables."""
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from blackwidow import feed_plan
from blackwidow.feed_plan import Wanted, WikiFeedState
from shared.feed_wire import CHECK, HIDE, HISTORY, REVISIONS, VISIBILITY, FeedChange, FeedGap, FeedReport, Nudge
from shared.hashing import source_uuid

WIKI = "http://wiki.test/w/api.php"
T0 = datetime(2026, 11, 24, 7, 0, 0, tzinfo=timezone.utc)


def key(title: str) -> str:
    return str(source_uuid(WIKI, title))


def change(title: str, kind: str = REVISIONS, second: int = 1) -> FeedChange:
    return FeedChange(title, kind, f"202611240700{second:02d}|{second}")


def report(*changes: FeedChange, position: str | None = None, covered: datetime | None = None,
           gaps: tuple[FeedGap, ...] = (), error: str | None = None) -> FeedReport:
    last = position or (changes[-1].at if changes else "20261124070000|0")
    return FeedReport(since=None, position=last, changes=changes,
                      covered_to=(covered or T0 + timedelta(seconds=30)).isoformat(), gaps=gaps, error=error)


# live nodes, current reader, {node: requests waiting for the identity}, expected reader
READERS = [
    ("nobody live", [], None, {}, None),
    ("a new wiki goes by rendezvous", ["a", "b", "c"], None, {}, "rendezvous"),
    ("the reader stays while nobody waits more", ["a", "b"], "b", {"a": 1, "b": 1}, "b"),
    ("a node with far more waiting takes it: its holds serve the feed", ["a", "b"], "b", {"a": 5, "b": 1}, "a"),
    ("a few more waiting do not move it", ["a", "b"], "b", {"a": 4, "b": 1}, "b"),
    ("a dead reader is replaced", ["a", "c"], "b", {}, "rendezvous"),
    ("a backfill elsewhere beats an idle reader", ["a", "b"], "a", {"b": 3}, "b"),
    ("one page waiting elsewhere does not", ["a", "b"], "a", {"b": 1}, "a"),
]

# live nodes, current reader, {node: sources waiting}, {node: slot-seconds held lately}, expected reader
HOLDERS = [
    ("one long history holding the slot elsewhere takes it: the feed is read in its holds",
     ["a", "b"], "a", {"b": 1}, {"b": 55.0}, "b"),
    ("the reader holding as much stays", ["a", "b"], "a", {"b": 1}, {"a": 30.0, "b": 30.0}, "a"),
    ("turns of a few seconds do not move it", ["a", "b", "c"], "a", {}, {"a": 4.0, "b": 9.0, "c": 6.0}, "a"),
    ("nodes taking turns do not move it", ["a", "b"], "a", {}, {"a": 10.0, "b": 31.0}, "a"),
    ("nearly all of the last minute's slot time takes it", ["a", "b"], "a", {}, {"a": 3.0, "b": 52.0}, "b"),
    ("alone at the slot, but not for long yet", ["a", "b"], "a", {}, {"b": 20.0}, "a"),
    ("a holder that is not live is not chosen", ["a", "b"], "a", {}, {"z": 60.0}, "a"),
    ("far more waiting still wins first", ["a", "b", "c"], "a", {"b": 9}, {"c": 60.0}, "b"),
    ("and the holder does not take it back from there", ["a", "b", "c"], "b", {"b": 9}, {"c": 60.0}, "b"),
]


@pytest.mark.parametrize("why, live, current, waiting, expected", READERS, ids=[r[0] for r in READERS])
def test_the_reader_is_the_busiest_node_else_stays(why, live, current, waiting, expected):
    if expected == "rendezvous":
        expected = feed_plan.reader_for(WIKI, live)
        assert expected in live
        assert feed_plan.reader_for(WIKI, list(reversed(live))) == expected        # order does not matter
    assert feed_plan.reader_for(WIKI, live, current, waiting) == expected


@pytest.mark.parametrize("why, live, current, waiting, held, expected", HOLDERS, ids=[r[0] for r in HOLDERS])
def test_the_reader_goes_where_the_slot_has_been(why, live, current, waiting, held, expected):
    assert feed_plan.reader_for(WIKI, live, current, waiting, held) == expected


def test_rendezvous_moves_only_the_feeds_a_joining_node_wins():
    wikis = [f"http://wiki{i}.test/w/api.php" for i in range(200)]
    before = {w: feed_plan.reader_for(w, ["a", "b", "c"]) for w in wikis}
    after = {w: feed_plan.reader_for(w, ["a", "b", "c", "d"]) for w in wikis}
    assert all(after[w] in (before[w], "d") for w in wikis)
    assert 20 < sum(after[w] == "d" for w in wikis) < 80


def test_duties_go_to_one_reader_per_wiki_from_the_acknowledged_position():
    feeds = {WIKI: WikiFeedState(acked="20261124070000|5", reader="b")}
    wanted = {WIKI: Wanted("wiki.test", ("t1", "t2")), "http://other.test/api.php": Wanted(None, ("t1",))}
    duties = feed_plan.duties(feeds, wanted, ["a", "b"], 10.0)
    assert duties["b"][WIKI].position == "20261124070000|5"
    assert duties["b"][WIKI].tenants == ("t1", "t2") and duties["b"][WIKI].identity == "wiki.test"
    assert sum(len(d) for d in duties.values()) == 2
    assert feed_plan.with_readers(feeds, duties)[WIKI].reader == "b"


def test_a_change_becomes_a_nudge_for_each_node_holding_its_page():
    holders = {key("Apple"): {"a"}, key("Pear"): {"a", "b"}}
    state = feed_plan.absorb(WikiFeedState(), "r", report(change("Apple", second=1), change("Pear", HISTORY, 2),
                                                          change("Plum", second=3)),
                             holders, {"a", "b"}, WIKI, T0)
    assert state.pending == {"a": {key("Apple"): REVISIONS, key("Pear"): HISTORY}, "b": {key("Pear"): HISTORY}}
    assert state.read_to == "20261124070003|3" and state.changes == 3 and state.reader == "r"
    out = feed_plan.outgoing({WIKI: state})
    assert set(out["b"]) == {Nudge(WIKI, HISTORY, key("Pear"))}


def test_what_was_routed_is_not_routed_again_and_history_wins_over_revisions():
    holders = {key("Apple"): {"a"}}
    first = feed_plan.absorb(WikiFeedState(), "r", report(change("Apple", HISTORY, 1)), holders, {"a"}, WIKI, T0)
    # the same report again (the reader has not seen an acknowledgement yet), and a later edit of the page
    again = feed_plan.absorb(first, "r", report(change("Apple", HISTORY, 1), change("Apple", REVISIONS, 2)),
                             holders, {"a"}, WIKI, T0)
    assert again.pending == {"a": {key("Apple"): HISTORY}} and again.changes == 2


def test_a_position_is_acknowledged_only_once_every_nudge_up_to_it_was_delivered():
    holders = {key("Apple"): {"a"}, key("Pear"): {"b"}}
    covered = T0 + timedelta(seconds=40)
    state = feed_plan.absorb(WikiFeedState(acked="20261124070000|0", watermark=T0), "r",
                             report(change("Apple"), change("Pear", second=2), covered=covered),
                             holders, {"a", "b"}, WIKI, T0)
    assert feed_plan.settle(state).acked == "20261124070000|0"          # nothing delivered yet
    sent = feed_plan.outgoing({WIKI: state})
    # a's poll was answered, b's failed: b's nudge stays, and so does the old position
    half = feed_plan.settle(feed_plan.delivered(state, sent, answered={"a"}, live={"a", "b"}))
    assert half.pending == {"b": {key("Pear"): REVISIONS}} and half.acked == "20261124070000|0"
    assert half.watermark == T0
    done = feed_plan.settle(feed_plan.delivered(half, sent, answered={"a", "b"}, live={"a", "b"}))
    assert done.pending == {} and done.acked == "20261124070002|2" and done.watermark == covered


def test_a_dead_node_keeps_nothing_pending():
    state = WikiFeedState(pending={"gone": {key("Apple"): REVISIONS}}, read_to="20261124070001|1")
    after = feed_plan.settle(feed_plan.delivered(state, {}, answered=set(), live={"a"}))
    assert after.pending == {} and after.acked == "20261124070001|1"


def test_a_gap_checks_every_page_of_the_wiki_once():
    gap = FeedGap("2026-08-01T00:00:00+00:00", "2026-09-01T00:00:00+00:00")
    state = feed_plan.absorb(WikiFeedState(), "r", report(gaps=(gap,)), {}, {"a", "b"}, WIKI, T0)
    assert state.pending == {"a": {None: CHECK}, "b": {None: CHECK}} and state.gaps == 1
    assert state.last_gap == "2026-08-01T00:00:00+00:00/2026-09-01T00:00:00+00:00"
    cleared = feed_plan.delivered(state, feed_plan.outgoing({WIKI: state}), answered={"a", "b"}, live={"a", "b"})
    again = feed_plan.absorb(cleared, "r", report(gaps=(gap,)), {}, {"a", "b"}, WIKI, T0)
    assert again.pending == {} and again.gaps == 1


def test_the_watermark_never_goes_back():
    state = WikiFeedState(read_to="20261124070005|5", covered_to=T0 + timedelta(seconds=50))
    # a new reader starting over from the acknowledged position reports an older span
    after = feed_plan.absorb(state, "r2", report(position="20261124070001|1", covered=T0), {}, set(), WIKI, T0)
    assert after.read_to == "20261124070005|5" and after.covered_to == T0 + timedelta(seconds=50)


# reader state, seconds since its last report, error, expected followed
FOLLOWED = [
    ("answered just now", "20261124070000|0", 2, None, True),
    ("never acknowledged anything", None, 2, None, False),
    ("silent for longer than three reads", "20261124070000|0", 31, None, False),
    ("its last read failed", "20261124070000|0", 2, "MaxLagged: lagged", False),
]


@pytest.mark.parametrize("why, acked, ago, error, expected", FOLLOWED, ids=[f[0] for f in FOLLOWED])
def test_a_wiki_is_followed_only_while_its_feed_answers(why, acked, ago, error, expected):
    now = T0 + timedelta(seconds=100)
    feeds = {WIKI: WikiFeedState(acked=acked, reported_at=now - timedelta(seconds=ago), error=error)}
    assert feed_plan.followed(feeds, {WIKI: Wanted(None, ())}, now, stale_s=30) == ((WIKI,) if expected else ())


def test_nudges_per_poll_are_bounded_with_checks_first():
    many = {f"k{i}": REVISIONS for i in range(feed_plan.MAX_NUDGES_PER_POLL + 10)} | {None: CHECK}
    out = feed_plan.outgoing({WIKI: WikiFeedState(pending={"a": many})})["a"]
    assert len(out) == feed_plan.MAX_NUDGES_PER_POLL and out[0] == Nudge(WIKI, CHECK, None)


# (id, wiki, settled as stored, settled as the tick writes it), the watermark its row keeps
WATERMARKS = [
    (("s", WIKI, None, True), {}),
    (("s", WIKI, True, True), {}),
    (("s", WIKI, None, False), {}),
    (("s", WIKI, True, False), {"s": T0}),
    (("s", WIKI, False, True), {}),
]


@pytest.mark.parametrize("sub, expected", WATERMARKS)
def test_a_subscription_that_stops_being_settled_keeps_the_watermark_it_had(sub, expected):
    assert feed_plan.frozen_watermarks([sub], {WIKI: T0}) == expected


def test_nudges_taken_outside_a_poll_hold_the_watermark_until_their_node_answered_a_poll():
    holders = {key("Apple"): {"a"}}
    covered = T0 + timedelta(seconds=40)
    state = feed_plan.absorb(WikiFeedState(acked="20261124070000|0", watermark=T0), "r",
                             report(change("Apple"), covered=covered), holders, {"a"}, WIKI, T0)
    pushed = feed_plan.delivered(state, feed_plan.outgoing({WIKI: state}), answered={"a"}, live={"a"})
    # delivered, but a's statuses were reported before it took the nudge: they may still say settled
    held = feed_plan.settle(pushed, took={"a"})
    assert held.pending == {} and held.acked == "20261124070000|0" and held.watermark == T0
    # a later read before a answers: the newer position waits for a too
    later = feed_plan.settle(feed_plan.absorb(held, "r", report(change("Pear", second=5), covered=covered
                                                                + timedelta(seconds=5)), {}, {"a"}, WIKI, T0))
    assert later.acked == "20261124070000|0" and later.awaiting == {"a"}
    assert feed_plan.confirm(later, answered=set(), live={"a"}).acked == "20261124070000|0"
    done = feed_plan.confirm(later, answered={"a"}, live={"a"})
    assert done.acked == "20261124070005|5" and done.watermark == covered + timedelta(seconds=5)
    # a node that died holds nothing back
    assert feed_plan.confirm(later, answered=set(), live=set()).acked == "20261124070005|5"


def test_reads_that_find_nothing_new_still_advance_the_watermark():
    state = WikiFeedState(acked="20261124070000|0", watermark=T0, read_to="20261124070000|0", covered_to=T0)
    quiet = feed_plan.absorb(state, "r", report(position="20261124070000|0", covered=T0 + timedelta(seconds=9)),
                             {}, set(), WIKI, T0)
    after = feed_plan.settle(quiet)
    assert after.acked == "20261124070000|0" and after.watermark == T0 + timedelta(seconds=9)


def test_a_visibility_change_carries_its_revisions_and_hidden_fields_to_the_node_until_delivered():
    holders = {key("Apple"): {"a"}}
    first = FeedChange("Apple", VISIBILITY, "20261124070001|1", 7, (10,), ((10, ("content",)),))
    second = FeedChange("Apple", VISIBILITY, "20261124070002|2", 7, (10, 12), ((10, ("user",)), (12, ("user",))))
    state = feed_plan.absorb(WikiFeedState(), "r", report(first, second), holders, {"a"}, WIKI, T0)
    out = feed_plan.outgoing({WIKI: state})["a"]
    hides = ((10, ("content", "user")), (12, ("user",)))
    assert out == (Nudge(WIKI, VISIBILITY, key("Apple"), (10, 12), hides),)
    # a stronger kind compares the whole history, and still hides first what the log said was hidden
    history = feed_plan.absorb(state, "r", report(change("Apple", HISTORY, 3)), holders, {"a"}, WIKI, T0)
    assert feed_plan.outgoing({WIKI: history})["a"] == (Nudge(WIKI, HISTORY, key("Apple"), (), hides),)
    done = feed_plan.delivered(state, {"a": out}, answered={"a"}, live={"a"})
    assert done.pending == {} and done.revs == {} and done.hides == {}
    # not taken (the node did not answer): kept for its next poll
    kept = feed_plan.delivered(state, {"a": out}, answered=set(), live={"a"})
    assert feed_plan.outgoing({WIKI: kept})["a"] == out
    # a change that only hides carries no revision to read again, and weakens nothing pending
    only = FeedChange("Pear", HIDE, "20261124070004|4", 8, (), ((20, ("user",)),))
    holders[key("Pear")] = {"a"}
    hidden = feed_plan.absorb(state, "r", report(only), holders, {"a"}, WIKI, T0)
    assert set(feed_plan.outgoing({WIKI: hidden})["a"]) == {*out, Nudge(WIKI, HIDE, key("Pear"), (), only.hide)}
    over = feed_plan.absorb(state, "r", report(replace(only, title="Apple")), holders, {"a"}, WIKI, T0)
    assert feed_plan.outgoing({WIKI: over})["a"] == (Nudge(WIKI, VISIBILITY, key("Apple"), (10, 12),
                                                           (*hides, (20, ("user",)))),)


def test_edits_carry_their_revision_ids_unless_a_change_of_the_page_named_none():
    holders = {key("Apple"): {"a"}, key("Pear"): {"a"}}
    edits = [FeedChange("Apple", REVISIONS, "20261124070001|1", 7, (10,)),
             FeedChange("Apple", REVISIONS, "20261124070002|2", 7, (11,)),
             FeedChange("Pear", REVISIONS, "20261124070003|3", 8, (12,)),
             FeedChange("Pear", REVISIONS, "20261124070004|4", 8)]          # a move or a deletion: no id
    state = feed_plan.absorb(WikiFeedState(), "r", report(*edits), holders, {"a"}, WIKI, T0)
    out = feed_plan.outgoing({WIKI: state})["a"]
    assert sorted(out, key=lambda n: n.key) == sorted([Nudge(WIKI, REVISIONS, key("Apple"), (10, 11)),
                                                       Nudge(WIKI, REVISIONS, key("Pear"))], key=lambda n: n.key)
    done = feed_plan.delivered(state, {"a": out}, answered={"a"}, live={"a"})
    assert done.revs == {} and done.blind == frozenset()
    # a later edit of Pear names its revision again
    later = feed_plan.absorb(done, "r", report(FeedChange("Pear", REVISIONS, "20261124070005|5", 8, (13,))),
                             holders, {"a"}, WIKI, T0)
    assert feed_plan.outgoing({WIKI: later})["a"] == (Nudge(WIKI, REVISIONS, key("Pear"), (13,)),)
