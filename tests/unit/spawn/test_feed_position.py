"""Where a change feed reader stands and when the feed no longer covers what follows: pure rules."""
from datetime import datetime, timezone

import pytest

from spawn.feed_position import FeedPosition, Gap, gap, still_holds


def at(second: int) -> datetime:
    return datetime(2026, 11, 24, 7, 4, second, tzinfo=timezone.utc)


def pos(second: int, rcid: int) -> FeedPosition:
    return FeedPosition(at(second), rcid)


NOW = at(59)


def test_the_token_is_the_rccontinue_that_resumes_there_and_reads_back():
    position = pos(22, 19)
    assert position.token == "20261124070422|19"
    assert FeedPosition.parse(position.token) == position


@pytest.mark.parametrize("token", ["", "20261124070422", "2026-11-24T07:04:22Z|19", "20261124070422|x"])
def test_a_token_that_names_no_position_is_refused(token):
    with pytest.raises(ValueError):
        FeedPosition.parse(token)


def test_positions_order_as_the_feed_does_by_second_then_rcid():
    assert pos(22, 30) < pos(22, 31) < pos(23, 2)


# position, first entry a read from it returned, newest entry at or before its second, expected gap
TABLE = [
    ("its own entry is still there", pos(22, 19), pos(22, 19), None, None),
    ("a later entry of the same second", pos(22, 19), pos(22, 21), None, None),
    # a page deletion removed the position's own entry (an edit) but older entries remain
    ("own entry gone, older ones remain", pos(22, 19), pos(30, 25), pos(21, 12), None),
    ("own entry gone, the feed idle since", pos(22, 19), None, pos(21, 12), None),
    ("nothing at or before it: dropped for age", pos(22, 19), pos(40, 90), None,
     Gap(at(22), at(40), pos(40, 89))),
    ("a start before the oldest entry", FeedPosition(datetime(2000, 1, 1, tzinfo=timezone.utc), 0), pos(3, 1), None,
     Gap(datetime(2000, 1, 1, tzinfo=timezone.utc), at(3), pos(3, 0))),
    ("an empty feed proves nothing", pos(22, 19), None, None, Gap(at(22), NOW, FeedPosition(NOW, 0))),
]


@pytest.mark.parametrize("position, first, older, expected", [row[1:] for row in TABLE],
                         ids=[row[0] for row in TABLE])
def test_a_gap_is_reported_only_when_no_entry_proves_the_feed_reaches_back(position, first, older, expected):
    assert gap(position, first, older, NOW) == expected


def test_reading_on_from_a_gap_starts_with_the_oldest_entry_and_finds_no_new_gap():
    missing = gap(pos(22, 19), pos(40, 90), None, NOW)
    assert missing is not None and still_holds(missing.resume, pos(40, 90))
    assert gap(missing.resume, pos(40, 90), None, NOW) is None
