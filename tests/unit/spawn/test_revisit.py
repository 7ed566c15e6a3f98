from datetime import timedelta

import pytest

from spawn import revisit
from spawn.revisit import RevisitBatcher
from tests.unit.spawn.fakes import T0, FakeClock

HOUR = 3600.0
DAY = 24 * HOUR


def test_worked_example_28_revisions_in_14_days_is_12_hours():
    assert revisit.expected_interval(28, 14 * DAY) == pytest.approx(12 * HOUR)


def test_worked_example_135_revisions_in_13_days_is_about_2_31_hours():
    assert revisit.expected_interval(135, 13 * DAY) / HOUR == pytest.approx(2.311, abs=0.001)


@pytest.mark.parametrize("stored, window", [(5, 5), (20, 20), (150, 20), (201, 21), (5000, 500)])
def test_window_is_max_of_20_and_ten_percent_of_stored(stored, window):
    assert revisit.window_size(stored) == window


def test_interval_from_history_uses_only_the_newest_window():
    # 20 recent edits one hour apart, preceded by 180 edits a day apart: only the recent ones count
    stamps = [T0 + timedelta(days=i) for i in range(180)]
    stamps += [stamps[-1] + timedelta(hours=i + 1) for i in range(20)]
    newest_first = stamps[::-1]
    interval = revisit.interval_from_history(newest_first, len(stamps))
    assert interval == pytest.approx(19 * HOUR / 20)


def test_first_delay_is_bounded():
    assert revisit.first_delay(12 * HOUR, 2 * HOUR, 60, DAY) == pytest.approx(10 * HOUR)
    assert revisit.first_delay(12 * HOUR, 30 * DAY, 60, DAY) == 60            # overdue: soon, not at once
    assert revisit.first_delay(90 * DAY, 0, 60, DAY) == DAY                    # slow pages: at most a day
    assert revisit.first_delay(None, 0, 60, DAY) == DAY                        # unknown rate


class _InfoClient:
    host = "wiki.test"

    def __init__(self, latest):
        self.latest = latest
        self.requests: list[list[int]] = []

    def last_rev_ids(self, page_ids, **kw):
        self.requests.append(list(page_ids))
        return {p: self.latest.get(p) for p in page_ids}


def test_batcher_checks_50_pages_per_request_and_wakes_only_moved_pages():
    clock = FakeClock()
    client = _InfoClient({p: p * 10 for p in range(1, 121)})
    client.latest[3] = 31            # page 3 moved
    client.latest[77] = 771          # page 77 moved
    batcher = RevisitBatcher(client, min_s=60, clock=clock)
    batcher._ensure_thread = lambda: None       # drive it by hand
    woken = []
    for p in range(1, 121):
        batcher.schedule(f"k{p}", p, p * 10, 5.0, 3600.0, lambda p=p: woken.append(p))
    assert batcher.check_due() == 0 and client.requests == []      # nothing due yet
    clock.advance(6)
    assert batcher.check_due() == 2
    assert [len(r) for r in client.requests] == [50, 50, 20]
    assert sorted(woken) == [3, 77]
    assert len(batcher) == 118                    # the unchanged ones wait another interval
    clock.advance(60)
    assert batcher.check_due() == 0 and len(client.requests) == 3
    clock.advance(3600)
    batcher.check_due()
    assert len(client.requests) == 6


def test_cancelled_pages_are_not_checked():
    clock = FakeClock()
    client = _InfoClient({1: 10})
    batcher = RevisitBatcher(client, min_s=60, clock=clock)
    batcher._ensure_thread = lambda: None
    batcher.schedule("a", 1, 10, 0, 60, lambda: None)
    batcher.cancel("a")
    clock.advance(1)
    batcher.check_due()
    assert client.requests == []
