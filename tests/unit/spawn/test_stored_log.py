"""A source's stored log (spawn.stored_log) and a source starting where the page is already stored: credited
from the store's count, with the newest revisions and nothing older read."""
from datetime import timedelta

import pytest

from spawn.stored_log import RECENT_MAX, StoredLog
from tests.unit.spawn.fakes import make_revisions
from tests.unit.spawn.test_registry import Harness, spec


class Older:
    """The store's ids up to `newest` where ids are 1, 2, 3, ..., and how often they were read."""

    def __init__(self):
        self.reads = 0

    def __call__(self, newest: tuple[int, float]) -> list[int]:
        self.reads += 1
        return list(range(1, newest[0] + 1))


@pytest.mark.parametrize("count, recent, index, expected, wants_older", [
    (5, [(4, 0.0), (5, 0.0)], -1, 5, False),           # the newest are held
    (5, [(4, 0.0), (5, 0.0)], 3, 4, False),
    (5, [(4, 0.0), (5, 0.0)], 0, None, True),          # an older one is unknown until read
    (5, [(4, 0.0), (5, 0.0)], 2, None, True),
    (1, [(1, 0.0)], 0, 1, False),
])
def test_ids_are_held_for_the_newest_and_older_ones_are_asked_for(count, recent, index, expected, wants_older):
    older = Older()
    log = StoredLog(count, recent, older)
    assert (len(log), log[index], log.wants_older, older.reads) == (count, expected, wants_older, 0)


def test_older_ids_are_read_once_and_the_log_grows_on():
    older = Older()
    log = StoredLog(10, [(10, 0.0)], older)
    assert log[2] is None and log.wants_older
    log.load_older()
    assert (log[2], log[5], log.wants_older) == (3, 6, False) and older.reads == 1
    log.extend([(11, 1.0), (12, 2.0)])
    assert (len(log), log.newest, log[-1], log[2], log[10]) == (12, 12, 12, 3, 11) and older.reads == 1


def test_the_log_holds_at_most_the_newest_recent_max_and_their_timestamps_newest_first():
    log = StoredLog(0, [], Older())
    log.extend((i, float(i)) for i in range(1, RECENT_MAX + 11))
    newest = float(RECENT_MAX + 10)
    assert len(log) == RECENT_MAX + 10 and log.newest_timestamps(3) == [newest, newest - 1, newest - 2]


class CountingHarness(Harness):
    """A page another node already stored whole: 3,000 revisions a day apart."""

    def __init__(self):
        super().__init__(revisions=3000)
        self.wiki.history = make_revisions(3000, every=timedelta(days=1))
        self.store.write(self.wiki.history)
        self.rows = 0
        history = self.store.history

        def counted(*args, **kw):
            rows = list(history(*args, **kw))
            self.rows += len(rows)
            return iter(rows)
        self.store.history = counted


def test_a_source_starting_on_a_stored_page_is_credited_from_the_count_without_reading_the_history():
    h = CountingHarness()
    h.registry.upsert(spec("a"))
    h.run()
    st = h.status("a")
    assert (st.state, st.revisions, st.last_rev_id) == ("running", 3000, h.wiki.history[-1].rev_id)
    assert h.made[0].written == 0
    assert h.rows <= 40          # the newest month's revisions, for the revisit rate
    page_id, last_id, delay, every = h.batcher.scheduled[spec("a").source_uuid]
    assert last_id == h.wiki.history[-1].rev_id and every == pytest.approx(86400, rel=0.1)


def test_a_subscriber_capped_below_the_stored_count_reads_the_stored_ids_once():
    h = CountingHarness()
    h.registry.upsert(spec("a", quota=2990))
    h.registry.upsert(spec("b", quota=10))
    h.run()
    for sub_id, n in (("a", 2990), ("b", 10)):
        st = h.status(sub_id)
        assert (st.state, st.revisions, st.last_rev_id) == ("limit_reached", n, h.wiki.history[n - 1].rev_id)
    assert h.rows <= 40 + 3000


def test_a_capped_newcomer_is_named_its_last_revision_by_the_sources_thread_not_under_the_registrys_lock():
    h = CountingHarness()
    h.registry.upsert(spec("a"))
    h.run()
    read = h.rows
    h.registry.upsert(spec("b", quota=10))        # the registry's lock is held here: no store read
    assert h.rows == read and (h.status("b").revisions, h.status("b").last_rev_id) == (10, None)
    h.run()                                       # the source's pass reads the stored ids once
    st = h.status("b")
    assert (st.state, st.revisions, st.last_rev_id) == ("limit_reached", 10, h.wiki.history[9].rev_id)
    assert h.rows > read
