"""spawn.suppression_log: each suppression log entry goes once into the feed's order, after what the hub has
routed and never past an entry not yet read."""
from datetime import datetime, timedelta, timezone

import pytest

from spawn.feed_events import VisibilityChanged
from spawn.feed_position import FeedPosition
from spawn.suppression_log import Logged, place

T0 = datetime(2026, 11, 28, 7, 0, 0, tzinfo=timezone.utc)


def sec(n: int) -> datetime:
    return T0 + timedelta(seconds=n)


def pos(n: int, rcid: int) -> FeedPosition:
    return FeedPosition(sec(n), rcid)


def hidden(log_id: int, n: int) -> Logged:
    event = VisibilityChanged(rcid=0, timestamp=sec(n), page_id=7, ns=0, title="Apple", rev_ids=(70 + log_id,),
                              hidden_before=frozenset(), hidden_after=frozenset({"comment"}), suppressed=True)
    return Logged(log_id, sec(n), event)


def block(log_id: int, n: int) -> Logged:
    return Logged(log_id, sec(n), None)


CASES = [
    # (name, entries, since, end, complete, seen, placed as (second, rcid), position after)
    ("an entry between two read entries goes at its own second",
     [hidden(1, 5)], pos(0, 10), pos(9, 20), False, {}, [(5, 0)], pos(9, 20)),
    ("an entry in the starting entry's second goes right after it",
     [hidden(1, 0)], pos(0, 10), pos(9, 20), False, {}, [(0, 11)], pos(9, 20)),
    ("an entry in the last read entry's second goes before it",
     [hidden(1, 9)], pos(0, 10), pos(9, 20), False, {}, [(9, 0)], pos(9, 20)),
    ("past the last entry read, with entries left unread: a later read places it",
     [hidden(1, 12)], pos(0, 10), pos(9, 20), False, {}, [], pos(9, 20)),
    ("past the last entry read, with nothing left unread: the read ends at its place",
     [hidden(1, 12)], pos(0, 10), pos(9, 20), True, {}, [(12, 0)], pos(12, 0)),
    ("a quiet feed: the read ends at the entry's place, after the starting entry",
     [hidden(1, 0)], pos(0, 10), pos(0, 10), True, {}, [(0, 11)], pos(0, 11)),
    ("nothing read and entries left unread: nothing moves",
     [hidden(1, 0)], pos(0, 10), pos(0, 10), False, {}, [], pos(0, 10)),
    ("placed before: not again",
     [hidden(1, 5)], pos(5, 0), pos(9, 20), True, {1: sec(5)}, [], pos(9, 20)),
    ("older than the starting second: the log's lestart left it out before; ignored",
     [hidden(1, 3)], pos(5, 0), pos(9, 20), True, {}, [], pos(9, 20)),
    ("entries in order of time, then log id",
     [hidden(2, 6), hidden(1, 6), hidden(3, 4)], pos(0, 10), pos(9, 20), False, {}, [(4, 0), (6, 0), (6, 0)],
     pos(9, 20)),
    ("an entry that means nothing moves the position on a quiet feed but yields no event",
     [block(1, 3)], pos(0, 10), pos(0, 10), True, {}, [], pos(3, 0)),
]


@pytest.mark.parametrize("name,entries,since,end,complete,seen,want,position", CASES, ids=[c[0] for c in CASES])
def test_place(name, entries, since, end, complete, seen, want, position):
    placed = place(entries, since, end, complete=complete, seen=seen)
    assert [(int((e.timestamp - T0).total_seconds()), e.rcid) for e in placed.events] == want
    assert placed.position == position
    # every place is after the starting position, so the hub (which skips what it routed) routes it
    assert all(FeedPosition(e.timestamp, e.rcid) > since for e in placed.events)
    assert all(FeedPosition(e.timestamp, e.rcid) <= placed.position for e in placed.events)


def test_the_events_keep_what_the_log_said():
    (event,) = place([hidden(4, 5)], pos(0, 1), pos(9, 2), complete=False, seen={}).events
    assert isinstance(event, VisibilityChanged)
    assert event.suppressed and event.rev_ids == (74,) and event.newly_hidden == {"comment"}


def test_a_second_read_from_where_the_first_ended_places_nothing_twice():
    first = place([hidden(1, 9), hidden(2, 12)], pos(0, 10), pos(9, 20), complete=True, seen={})
    assert first.position == pos(12, 0) and set(first.seen) == {2}
    # the log is read again from the position's second: the entry there was placed already
    again = place([hidden(2, 12)], first.position, first.position, complete=True, seen=first.seen)
    assert again.events == () and again.position == first.position
    # a new entry in that same second is still placed, after the position
    later = place([hidden(2, 12), hidden(3, 12)], first.position, first.position, complete=True, seen=first.seen)
    assert [(e.rev_ids, e.rcid) for e in later.events] == [((73,), 1)]


def test_seen_ids_are_dropped_with_the_seconds_left_behind():
    placed = place([hidden(1, 2), hidden(2, 9)], pos(0, 1), pos(9, 5), complete=True, seen={})
    assert set(placed.seen) == {2}


def test_entries_of_one_second_go_in_log_id_order():
    placed = place([hidden(2, 6), hidden(1, 6)], pos(0, 10), pos(9, 20), complete=False, seen={})
    assert [e.rev_ids for e in placed.events] == [(71,), (72,)]
