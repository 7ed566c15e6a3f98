"""Registry and DataSource semantics without servers: sources run one pass at a time by hand."""
import threading
import time
from dataclasses import replace

import pytest

from shared.hashing import source_uuid
from shared.revisions.model import ResumePoint
from shared.wire import Lease, SubscriptionSpec
from spawn.host_limiter import Backoff
from spawn.mediawiki import BadResponse, Cancelled, PageInfo, PageUnavailable
from spawn.registry import Registry
from spawn.source import DataSource
from spawn.subscriber import Subscriber
from tests.unit.spawn.fakes import FakeBatcher, FakeClock, FakeWiki, MemoryStore, make_revisions

WIKI = "http://wiki.test/w/api.php"


def spec(sub_id="s1", title="Page", quota=None, content=False, tenant="t1"):
    return SubscriptionSpec(id=sub_id, source_uuid=str(source_uuid(WIKI, title)), tenant_id=tenant, wiki=WIKI,
                            title=title, content=content, quota=quota)


class ManualSource(DataSource):
    """A DataSource whose thread never starts: the test calls run_once()."""
    started = 0

    def start(self):
        self.started += 1


class Harness:
    def __init__(self, revisions=50, batch=10):
        self.clock = FakeClock()
        self.store = MemoryStore()
        self.wiki = FakeWiki(make_revisions(revisions), batch=batch)
        self.batcher = FakeBatcher()
        self.made: list[ManualSource] = []
        self.registry = Registry(self.make, orphan_after_s=20.0, clock=self.clock)

    def make(self, s, on_limit):
        src = ManualSource(s.source_uuid, s.title, client=self.wiki, store=self.store, batcher=self.batcher,
                           revisit_min_s=60, revisit_max_s=86400, on_limit=on_limit, now=lambda: 2e9)
        self.made.append(src)
        return src

    def status(self, sub_id):
        return next(s for s in self.registry.snapshot() if s.id == sub_id)

    def run(self):
        for src in list(self.made):
            if not src.stopped:
                src.run_once()


def test_two_subscriptions_on_one_article_share_one_source_and_both_get_everything():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b", tenant="t2"))
    assert len(h.made) == 1 and h.made[0].started == 1
    assert h.registry.counts() == {"subscribers": 2, "sources": 1}
    h.run()
    assert len(h.store.rows) == 50
    for sub_id in "ab":
        st = h.status(sub_id)
        assert (st.state, st.revisions, st.last_rev_id) == ("running", 50, 149)


def test_late_subscriber_is_credited_with_what_is_stored_and_nothing_is_fetched_twice():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.run()
    writes = h.store.writes
    h.registry.upsert(spec("b", quota=30))
    assert h.status("b").revisions == 30 and h.status("b").state == "limit_reached"
    h.registry.upsert(spec("c"))
    h.run()
    assert h.status("c").revisions == 50 and h.store.writes == writes


def test_same_spec_twice_changes_nothing():
    h = Harness()
    _, changed = h.registry.upsert(spec("a"))
    assert changed
    status, changed = h.registry.upsert(spec("a"))
    assert not changed and status.id == "a"
    assert len(h.made) == 1 and h.made[0].started == 1


def test_changed_quota_updates_in_place_without_restarting_the_source():
    h = Harness()
    h.registry.upsert(spec("a", quota=10))
    h.registry.upsert(spec("b"))
    h.run()
    assert h.status("a").state == "limit_reached" and h.status("a").revisions == 10
    _, changed = h.registry.upsert(spec("a", quota=40))
    assert changed and len(h.made) == 1 and h.made[0].started == 1 and not h.made[0].stopped
    st = h.status("a")
    assert (st.state, st.revisions, st.last_rev_id) == ("limit_reached", 40, 139)
    assert st.spec["quota"] == 40
    h.registry.upsert(spec("a", quota=80))
    st = h.status("a")
    assert (st.state, st.revisions, st.last_rev_id) == ("running", 50, 149)
    assert len(h.made) == 1 and h.made[0].started == 1


def test_content_flag_change_is_applied_to_the_next_batches_in_place():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.run()
    h.registry.upsert(spec("a", content=True))
    h.wiki.history += make_revisions(5, start_id=150)[0:0]     # nothing new upstream
    h.run()
    assert h.wiki.calls[-1][2] is True and len(h.made) == 1


def test_content_subscriber_joining_a_metadata_history_gets_it_backfilled_without_redelivery():
    h = Harness(revisions=50, batch=20)
    h.registry.upsert(spec("a"))
    h.run()
    assert h.store.content("wiki.test", 149) is None
    h.registry.upsert(spec("b", content=True))
    h.run()
    assert all(r.content == f"text of {r.rev_id}" for r in h.store.rows.values())
    assert h.status("a").revisions == h.status("b").revisions == 50
    assert h.made[0].written == 50                          # the backfill rewrote, it delivered nothing
    calls = len(h.wiki.calls)
    h.run()                                                 # done once: the newest row carries content
    assert [c for c in h.wiki.calls[calls:] if c[0] == "revisions" and c[1] is None] == []


def test_quota_caps_what_the_source_writes():
    h = Harness(revisions=50, batch=20)
    h.registry.upsert(spec("a", quota=25))
    h.run()
    assert len(h.store.rows) == 25                      # never fetched-and-stored beyond the quota
    st = h.status("a")
    assert (st.state, st.revisions, st.last_rev_id) == ("limit_reached", 25, 124)
    assert h.registry.counts() == {"subscribers": 1, "sources": 0}     # it left; last out stopped the source
    assert h.made[0].stopped


def test_quota_zero_needs_no_source():
    h = Harness()
    status, _ = h.registry.upsert(spec("a", quota=0))
    assert status.state == "limit_reached" and h.made == []


def test_last_subscriber_out_stops_the_source_and_delete_is_idempotent():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b"))
    assert h.registry.remove("a")
    assert not h.made[0].stopped
    assert h.registry.remove("b")
    assert h.made[0].stopped and h.registry.counts() == {"subscribers": 0, "sources": 0}
    assert not h.registry.remove("b") and not h.registry.remove("never-seen")


def test_resume_from_the_store_drops_the_already_stored_revision():
    h = Harness(revisions=30)
    h.registry.upsert(spec("a"))
    h.run()
    h.wiki.history += make_revisions(40)[30:]
    h.made[0].wake()
    h.run()
    assert len(h.store.rows) == 40 and h.status("a").revisions == 40
    start = h.wiki.calls[-1][1]
    assert start == make_revisions(30)[-1].timestamp    # rvstart = newest stored, inclusive


def test_a_new_source_resolves_its_title_in_its_first_history_request():
    h = Harness(revisions=50, batch=20)
    h.registry.upsert(spec("a"))
    h.run()
    assert h.wiki.calls == [("open", None, False, "Page"), ("revisions", None, False)]
    assert len(h.store.rows) == 50 and h.status("a").revisions == 50


def test_a_source_started_again_opens_at_the_stored_resume_point():
    h = Harness(revisions=30, batch=20)
    h.registry.upsert(spec("a"))
    h.run()
    h.registry.remove("a")                          # as after a restart, or a move to this node
    h.wiki.history += make_revisions(45)[30:]
    h.wiki.calls.clear()
    h.registry.upsert(spec("b"))
    h.run()
    newest = make_revisions(30)[-1].timestamp
    assert h.wiki.calls == [("open", newest, False, "Page")]      # nothing stored is read again
    assert len(h.store.rows) == 45 and h.status("b").revisions == 45


def test_an_opening_for_the_page_the_title_no_longer_names_is_not_used():
    h = Harness(revisions=30)
    h.registry.upsert(spec("a"))
    h.run()
    h.registry.remove("a")
    h.wiki.page = PageInfo(8, 0, "Page", 0)         # deleted, then created again under the same title
    h.wiki.history = make_revisions(12, page_id=8, start_id=500)
    h.wiki.calls.clear()
    h.registry.upsert(spec("b"))
    h.run()
    assert h.wiki.calls[0] == ("open", make_revisions(30)[-1].timestamp, False, "Page")
    assert h.wiki.calls[1:] == [("revisions", None, False)]       # page 8 from its first revision
    assert h.status("b").revisions == 12 and h.status("b").last_rev_id == 511


def test_a_source_that_may_take_nothing_yet_asks_the_wiki_nothing_until_a_lease_comes():
    h = Harness()
    h.registry.upsert(replace(spec("a"), leased=True))        # no quota lease from the hub yet
    h.run()
    assert h.wiki.calls == [] and h.store.rows == {}
    assert h.status("a").state == "waiting"
    h.registry.apply_leases({"a": Lease(cap=15, ttl_s=60.0, gen=1)})
    h.run()
    # one request resolves the title and reads the first batch, as without leases
    assert h.wiki.calls[0] == ("open", None, False, "Page") and ("resolve", "Page") not in h.wiki.calls
    assert h.status("a").revisions == 15 and len(h.store.rows) == 15


def test_orphans_are_dropped_after_the_timeout_and_named_ones_are_kept():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b", title="Other"))
    h.clock.advance(15)
    assert h.registry.poll(("a",)) == []
    h.clock.advance(10)                     # b last seen 25 s ago, a 10 s ago
    assert h.registry.poll(("a",)) == ["b"]
    assert [s.id for s in h.registry.snapshot()] == ["a"]
    assert h.registry.counts()["sources"] == 1


def test_a_put_refreshes_the_orphan_timer():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.clock.advance(19)
    h.registry.upsert(spec("a"))
    h.clock.advance(19)
    assert h.registry.poll(()) == []


def test_clear_stops_every_source_and_drops_every_job():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b", title="Other"))
    h.registry.clear()
    assert all(s.stopped for s in h.made) and h.registry.snapshot() == []


def test_revisit_is_scheduled_with_the_seed_rule_after_the_history_is_complete():
    h = Harness(revisions=50)
    h.registry.upsert(spec("a"))
    h.run()
    page_id, last_id, delay, every = h.batcher.scheduled[spec("a").source_uuid]
    assert (page_id, last_id) == (7, 149)
    assert every == pytest.approx(19 * 3600 / 20)     # newest 20 revisions, one hour apart
    assert delay == 60                                # the last edit is long past: first check soon


def test_a_changed_article_under_the_same_id_moves_the_subscriber():
    h = Harness()
    h.registry.upsert(spec("a"))
    h.registry.upsert(replace(spec("a", title="Other")))
    assert h.made[0].stopped and len(h.made) == 2


def test_rows_of_a_batch_interrupted_by_a_crash_are_neither_counted_nor_delivered_twice():
    h = Harness(revisions=50)
    revs = make_revisions(50)
    h.store.write(revs[:30])                      # rows 21..30 landed, the resume point did not move
    h.store.resume_override = ResumePoint(revs[19].rev_id, revs[19].timestamp)
    h.registry.upsert(spec("a"))
    h.run()
    st = h.status("a")
    assert (st.revisions, st.last_rev_id) == (50, revs[-1].rev_id)
    assert h.made[0].written == 30


def _wait(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_source_thread_reports_upstream_errors_as_waiting_and_stops_promptly():
    store, batcher = MemoryStore(), FakeBatcher()
    wiki = FakeWiki(make_revisions(5))

    def broken(*a, **kw):
        raise BadResponse("truncated or invalid JSON")
    wiki.open_history = broken
    src = DataSource("k", "Page", client=wiki, store=store, batcher=batcher, revisit_min_s=60, revisit_max_s=600,
                     on_limit=lambda s: None, backoff=Backoff(base_s=30, cap_s=30))
    sub = Subscriber(spec("a"), seen_at=0)
    src.attach(sub)
    src.start()
    _wait(lambda: sub.status().state == "waiting")
    assert "truncated" in sub.status().last_error and store.rows == {}
    src.stop()
    src.join(2.0)
    assert src.stopped and all(t.name != "source-Page" for t in threading.enumerate())


def test_source_thread_marks_a_missing_page_failed():
    wiki = FakeWiki([])

    def missing(title, **kw):
        raise PageUnavailable("page 'Page' does not exist")
    wiki.resolve = wiki.open_history = missing
    src = DataSource("k", "Page", client=wiki, store=MemoryStore(), batcher=FakeBatcher(), revisit_min_s=60,
                     revisit_max_s=600, on_limit=lambda s: None)
    sub = Subscriber(spec("a"), seen_at=0)
    src.attach(sub)
    src.start()
    _wait(lambda: sub.status().state == "failed")
    assert sub.status().last_error == "page 'Page' does not exist"
    src.stop()
    src.join(2.0)


# -- titles naming one page: a redirect and its target share one source --------------------------

def merged_away(src):
    """Run a source whose title turns out to name a page another source fetches: it stops."""
    with pytest.raises(Cancelled):
        src.run_once()
    assert src.stopped


def test_two_sources_resolving_to_one_page_merge_and_every_subscriber_gets_everything():
    h = Harness(revisions=50)
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b", title="Redirect", quota=30, tenant="t2"))   # the wiki resolves it to 'Page'
    assert len(h.made) == 2
    h.made[0].run_once()
    merged_away(h.made[1])
    assert h.registry.counts() == {"subscribers": 2, "sources": 1}
    # a: its opening and the rest of the history; b: its opening only
    assert [c[0] for c in h.wiki.calls] == ["open", "revisions", "open"]
    page_key = spec("a").source_uuid
    st_a, st_b = h.status("a"), h.status("b")
    assert (st_a.revisions, st_a.page_key) == (50, page_key)
    assert (st_b.state, st_b.revisions, st_b.page_key) == ("limit_reached", 30, page_key)   # its own quota
    h.registry.upsert(spec("c", title="Redirect"))          # the redirect again: the running source serves it
    assert len(h.made) == 2 and h.status("c").revisions == 50 and h.status("c").page_key == page_key


def test_a_target_subscribed_after_its_redirect_resolved_joins_the_redirects_source():
    h = Harness(revisions=20)
    h.registry.upsert(spec("r", title="Redirect"))
    h.run()
    h.registry.upsert(spec("a"))
    assert len(h.made) == 1 and h.registry.source(spec("a").source_uuid) is h.made[0]
    assert h.status("a").revisions == 20 and h.status("a").page_key == spec("a").source_uuid


def test_the_last_subscriber_leaving_stops_the_merged_source():
    h = Harness(revisions=20)
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b", title="Redirect"))
    h.made[0].run_once()
    merged_away(h.made[1])
    assert h.registry.remove("a") and not h.made[0].stopped     # b still reads from it
    assert h.registry.remove("b") and h.made[0].stopped
    assert h.registry.counts() == {"subscribers": 0, "sources": 0}
    h.registry.upsert(spec("b", title="Redirect"))          # a fresh start after that: a source of its own
    assert len(h.made) == 3 and h.made[2].started == 1


class HookedStore(MemoryStore):
    """Calls `hook` once, in the writing thread, right after the `at`-th write."""

    def __init__(self, at, hook=None):
        super().__init__()
        self.at, self.hook = at, hook

    def write(self, revisions):
        super().write(revisions)
        if self.writes == self.at and self.hook is not None:
            self.hook()


def test_a_subscriber_handed_over_in_the_middle_of_a_harvest_gets_every_revision():
    h = Harness(revisions=50, batch=10)
    h.store = HookedStore(at=2)
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b", title="Redirect"))
    # b's source resolves between the write and the delivery of a's second batch
    h.store.hook = lambda: merged_away(h.made[1])
    h.made[0].run_once()
    assert h.made[1].stopped and h.made[0].complete
    for sub_id in "ab":
        st = h.status(sub_id)
        assert (st.revisions, st.last_rev_id) == (50, 149)
    assert len(h.store.rows) == 50 and h.made[0].written == 50


def test_sources_resolving_concurrently_to_one_page_end_as_one():
    h = Harness(revisions=30, batch=10)
    for i in range(6):
        h.registry.upsert(spec(f"s{i}", title=f"Title {i}"))     # all resolve to 'Page'
    errors = []

    def run(src):
        try:
            src.run_once()
        except Cancelled:
            pass
        except Exception as exc:     # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(src,)) for src in h.made]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors
    live = [src for src in h.made if not src.stopped]
    assert len(live) == 1 and h.registry.counts()["sources"] == 1
    live[0].run_once()          # a subscriber handed over after its last batch wakes it for one more pass
    assert all(h.status(f"s{i}").revisions == 30 for i in range(6))
