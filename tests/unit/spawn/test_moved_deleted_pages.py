"""A source follows its page id across moves, shows a deleted page as `deleted` with rare re-checks only, and
reads the history again after an undeletion. Fakes only; the real wiki's side is in
tests/integration/spawn/test_moved_deleted_pages.py."""
import time
from contextlib import contextmanager
from typing import Iterator

import pytest
import requests
import responses

from shared.hashing import source_uuid
from spawn.host_limiter import Backoff, HostLimiter
from spawn.mediawiki import Cancelled, MediaWikiClient, PageDeleted, PageInfo
from spawn.source import DataSource
from spawn.subscriber import Subscriber
from tests.unit.spawn.fakes import make_revisions
from tests.unit.spawn.test_registry import Harness, spec

API = "http://wiki.test/w/api.php"


def _wait(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@contextmanager
def running(h: Harness, recheck_s: float) -> Iterator[tuple[DataSource, Subscriber]]:
    """A source of 'Page' on its own thread, re-checking a deleted page every `recheck_s`; stopped after."""
    src = DataSource(spec().source_uuid, "Page", client=h.wiki, store=h.store, batcher=h.batcher,
                     revisit_min_s=60, revisit_max_s=recheck_s, on_limit=lambda s: None, now=lambda: 2e9,
                     backoff=Backoff(base_s=0.01, cap_s=0.01))
    sub = Subscriber(spec("a"), seen_at=0)
    src.attach(sub)
    src.start()
    try:
        yield src, sub
    finally:
        src.stop()
        src.join(2.0)


def test_a_page_deleted_after_its_harvest_shows_deleted_and_is_only_rechecked_rarely():
    h = Harness(revisions=30)
    with running(h, recheck_s=0.3) as (src, sub):
        _wait(lambda: sub.status().revisions == 30 and src.complete)
        assert spec().source_uuid in h.batcher.scheduled
        h.wiki.deleted = True
        src.wake()                                  # the revisit check saw the page id answer as missing
        _wait(lambda: sub.status().state == "deleted")
        assert sub.status().last_error == "page 7 no longer exists on the wiki (deleted)"
        assert spec().source_uuid not in h.batcher.scheduled     # out of the revisit queue
        asked = len(h.wiki.calls)
        time.sleep(0.75)
        # about one re-check (page id, then title) per interval, never a retry loop
        assert 2 <= len(h.wiki.calls) - asked <= 6 and sub.status().state == "deleted"
        late = Subscriber(spec("b", tenant="t2"), seen_at=0)
        src.attach(late)                            # a subscriber joining it says so at once
        assert late.status().state == "deleted" and late.status().revisions == 30


def test_a_deleted_pages_recheck_paced_by_an_identity_budget_still_shows_deleted():
    h = Harness(revisions=5)
    real = h.wiki.page_by_id

    def paced(page_id, **kw):           # an identity-paced client reports its wait and then its service
        kw["on_wait"]("waiting for the upstream budget")
        time.sleep(0.05)
        kw["on_wait"](None)
        time.sleep(0.05)
        return real(page_id, **kw)
    h.wiki.page_by_id = paced
    with running(h, recheck_s=0.1) as (src, sub):
        _wait(lambda: src.complete)
        h.wiki.deleted = True
        src.wake()
        _wait(lambda: sub.status().state == "deleted")
        seen = set()
        for _ in range(40):
            seen.add(sub.status().state)
            time.sleep(0.01)
        assert seen == {"deleted"} and count_calls(h, "page_by_id") >= 2


def count_calls(h: Harness, kind: str) -> int:
    return sum(1 for c in h.wiki.calls if c[0] == kind)


def test_an_undeleted_page_is_read_again_from_its_start_and_old_restored_revisions_are_stored():
    h = Harness(revisions=30)
    full = h.wiki.history
    h.wiki.history = full[:10] + full[15:]           # 5 revisions deleted earlier (archived), 25 visible
    with running(h, recheck_s=0.2) as (src, sub):
        _wait(lambda: sub.status().revisions == 25 and src.complete)
        h.wiki.deleted = True
        src.wake()
        _wait(lambda: sub.status().state == "deleted")
        h.wiki.history, h.wiki.deleted = full, False     # restored: all 30, 5 of them older than the resume point
        _wait(lambda: sub.status().state == "running" and sub.status().revisions == 30, timeout_s=5.0)
        assert sorted(r.rev_id for r in h.store.rows.values()) == [r.rev_id for r in full]
        assert ("revisions", None, False) in h.wiki.calls     # re-read from the start, not after the resume point
        _wait(lambda: spec().source_uuid in h.batcher.scheduled)   # and revisited again


def test_a_page_created_again_at_the_title_under_a_new_id_is_followed_from_its_start():
    h = Harness(revisions=10)
    with running(h, recheck_s=0.2) as (src, sub):
        _wait(lambda: sub.status().revisions == 10 and src.complete)
        h.wiki.deleted = True
        src.wake()
        _wait(lambda: sub.status().state == "deleted")
        h.wiki.page = PageInfo(8, 0, "Page", 0)
        h.wiki.history = make_revisions(4, page_id=8, start_id=900)
        h.wiki.deleted = False                          # page 7 stays missing; the title names page 8 now
        _wait(lambda: sub.status().state == "running" and src.page.page_id == 8 and src.complete)
        assert sub.status().revisions == 4 and sub.status().last_rev_id == 903
        assert h.store.page("wiki.test", 7).deleted and not h.store.page("wiki.test", 8).deleted


def test_a_stored_page_deleted_before_its_source_starts_shows_deleted():
    h = Harness(revisions=20)
    h.store.write(h.wiki.history)
    h.wiki.deleted = True
    with running(h, recheck_s=60) as (src, sub):
        _wait(lambda: sub.status().state == "deleted")
        assert [c[0] for c in h.wiki.calls] == ["open", "page_by_id"]
        assert sub.status().revisions == 20            # what is stored still counts


def test_a_title_never_stored_and_missing_stays_failed_not_deleted():
    h = Harness(revisions=5)
    h.wiki.deleted = True
    with running(h, recheck_s=60) as (src, sub):
        _wait(lambda: sub.status().state == "failed")
        assert [c[0] for c in h.wiki.calls] == ["open"]


def test_a_page_moved_without_a_redirect_before_its_source_starts_is_followed_by_page_id():
    h = Harness(revisions=20)
    h.store.write(h.wiki.history)
    h.wiki.move("New", rev_id=500)
    h.wiki.missing_titles = {"Page"}
    h.registry.upsert(spec("a"))
    h.run()
    assert [c[0] for c in h.wiki.calls][:3] == ["open", "page_by_id", "open"] and h.wiki.calls[2][3] == "New"
    assert h.status("a").revisions == 21 and h.status("a").state == "running"
    assert h.store.page("wiki.test", 7).title == "New"
    assert h.status("a").page_key == str(source_uuid(spec().wiki, "New"))


def test_a_page_moved_while_harvested_keeps_its_source_and_the_new_title_joins_it():
    h = Harness(revisions=20)
    h.registry.upsert(spec("a"))
    h.run()
    h.wiki.move("New", rev_id=500)
    h.run()                                        # the revisit found the move's null revision
    new_key = str(source_uuid(spec().wiki, "New"))
    assert h.status("a").revisions == 21 and h.status("a").page_key == new_key
    assert h.made[0].page.title == "New" and h.store.page("wiki.test", 7).title == "New"
    h.registry.upsert(spec("b", title="New", tenant="t2"))
    h.registry.upsert(spec("c", tenant="t3"))      # the old title still names the same source
    assert len(h.made) == 1 and h.registry.counts() == {"subscribers": 3, "sources": 1}
    assert h.status("b").revisions == h.status("c").revisions == 21
    assert {h.status(s).page_key for s in "abc"} == {new_key}


def test_a_move_onto_a_title_another_source_here_fetches_merges_them():
    h = Harness(revisions=10)
    h.registry.upsert(spec("a"))
    h.registry.upsert(spec("b", title="New", tenant="t2"))
    h.made[0].run_once()
    # 'New' resolves (in this fake) to the same page id but under its own title: as after a move seen by
    # one source first
    h.wiki.move("New", rev_id=500)
    h.made[1].run_once()
    with pytest.raises(Cancelled):                 # the old-title source sees the move and hands over
        h.made[0].run_once()
    assert h.made[0].stopped and h.registry.counts() == {"subscribers": 2, "sources": 1}
    assert h.status("a").revisions == h.status("b").revisions == 11


@responses.activate
def test_a_history_request_answered_missing_raises_page_deleted_not_a_retried_bad_response():
    responses.get(API, json={"batchcomplete": True, "query": {"pages": [{"pageid": 7, "missing": True}]}})
    client = MediaWikiClient(requests.Session(), API, limiter=HostLimiter(0))
    with pytest.raises(PageDeleted) as err:
        next(client.revision_batches(PageInfo(7, 0, "Page", 1)))
    assert err.value.page_id == 7 and len(responses.calls) == 1
    assert client.page_by_id(7) is None and len(responses.calls) == 2


@responses.activate
def test_page_by_id_names_the_page_under_its_current_title():
    responses.get(API, json={"batchcomplete": True, "query": {"pages": [
        {"pageid": 7, "ns": 0, "title": "New", "lastrevid": 500}]}})
    client = MediaWikiClient(requests.Session(), API, limiter=HostLimiter(0))
    assert client.page_by_id(7) == PageInfo(7, 0, "New", 500)
