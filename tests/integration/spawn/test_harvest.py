"""Harvests of the seeded wiki into real Cassandra, in process: complete, exact, shared sources."""
import time
from dataclasses import replace

import pytest

from shared.hashing import source_uuid, wiki_key
from shared.wire import SubscriptionSpec
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.wikis import Wikis
from tools.wikigen import BIG_TITLE, REDIRECT_TITLE

pytestmark = pytest.mark.integration


def spec(api_url, sub_id, title, **kw):
    kw.setdefault("tenant_id", "t")
    return SubscriptionSpec(id=sub_id, source_uuid=str(source_uuid(api_url, title)), wiki=api_url, title=title,
                            **kw)


def as_expected(rev):
    ts = rev.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    return (ts, rev.user, rev.anon, rev.minor, rev.comment, rev.size, rev.sha1, rev.tags)


def expected_rows(page):
    """The generator's revisions as as_expected gives the stored ones; both carry tags sorted."""
    return [(r.timestamp, r.user, r.anon, r.minor, r.comment, r.size, r.sha1, r.tags) for r in page.revisions]


def wait_for(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


@pytest.fixture
def harness(spawn_config, store, mediawiki):
    metrics = SpawnMetrics()
    wikis = Wikis(spawn_config, http=mediawiki.session(), store=store, metrics=metrics)
    registry = Registry(wikis.make_source, orphan_after_s=60)
    yield registry, metrics
    registry.clear()
    wikis.stop()


def api_requests(metrics):
    return sum(s.value for m in metrics.api_requests.collect() for s in m.samples if s.name.endswith("_total"))


def status(registry, sub_id):
    return next(s for s in registry.snapshot() if s.id == sub_id)


@pytest.mark.parametrize("content", [False, True], ids=["metadata", "content"])
def test_big_article_harvested_completely_and_exactly(harness, store, mediawiki, content, record_property):
    registry, metrics = harness
    page = mediawiki.expected.page(BIG_TITLE)
    n = len(page.revisions)
    started = time.monotonic()
    registry.upsert(spec(mediawiki.api_url, "big", BIG_TITLE, content=content))
    src = registry.source(spec(mediawiki.api_url, "big", BIG_TITLE).source_uuid)
    wait_for(lambda: src.complete, 300, "the harvest to complete")
    elapsed = time.monotonic() - started
    requests_made = api_requests(metrics)
    rate = n / elapsed
    print(f"\nharvest {BIG_TITLE!r} content={content}: {n} revisions in {elapsed:.2f}s = {rate:.0f} rev/s, "
          f"{requests_made:.0f} API requests = {requests_made * 1000 / n:.1f} per 1,000 revisions")
    record_property("revisions_per_s", round(rate))
    st = status(registry, "big")
    assert (st.state, st.revisions) == ("running", n) and st.last_error is None
    stored = list(store.history(wiki_key(mediawiki.api_url), src.page.page_id))[::-1]
    assert [as_expected(r) for r in stored] == expected_rows(page)
    assert st.last_rev_id == stored[-1].rev_id == src.page.last_rev_id
    assert all(r.title == BIG_TITLE and r.content_model == "wikitext" for r in stored)
    assert requests_made <= 2 + (n // (50 if content else 500)) + 1       # resolve + batches, no retries
    if content:
        sample = stored[len(stored) // 2]
        assert store.content(sample.wiki, sample.rev_id)
    # the revisit was scheduled, not a busy loop
    assert src.batcher.__len__() == 1


def test_two_subscriptions_on_one_article_share_one_source_and_both_see_every_revision(harness, store,
                                                                                       mediawiki):
    registry, metrics = harness
    title = "Spider silk"
    n = len(mediawiki.expected.page(title).revisions)
    registry.upsert(spec(mediawiki.api_url, "a", title))
    registry.upsert(spec(mediawiki.api_url, "b", title, tenant_id="other"))
    assert registry.counts() == {"subscribers": 2, "sources": 1}
    src = registry.source(spec(mediawiki.api_url, "a", title).source_uuid)
    wait_for(lambda: src.complete, 120, "the harvest to complete")
    for sub_id in ("a", "b"):
        st = status(registry, sub_id)
        assert (st.state, st.revisions, st.last_rev_id) == ("running", n, src.page.last_rev_id)
    stored = list(store.history(wiki_key(mediawiki.api_url), src.page.page_id))
    assert len(stored) == len({r.rev_id for r in stored}) == n
    assert api_requests(metrics) <= 2 + n // 500 + 1                # fetched once, not once per subscriber


def test_redirect_is_followed_to_its_target(harness, store, mediawiki):
    registry, _ = harness
    registry.upsert(spec(mediawiki.api_url, "r", REDIRECT_TITLE, quota=10))
    src = registry.source(spec(mediawiki.api_url, "r", REDIRECT_TITLE).source_uuid)
    wait_for(lambda: status(registry, "r").state == "limit_reached", 60, "the quota")
    assert src.page.title == BIG_TITLE
    stored = list(store.history(wiki_key(mediawiki.api_url), src.page.page_id))
    assert len(stored) == 10                                  # never stored beyond what was wanted
    assert registry.counts()["sources"] == 0                  # the only subscriber left: source stopped


def test_a_redirect_and_its_target_share_one_fetcher_and_both_see_every_revision(harness, store, mediawiki):
    registry, metrics = harness
    n = len(mediawiki.expected.page(BIG_TITLE).revisions)
    registry.upsert(spec(mediawiki.api_url, "r", REDIRECT_TITLE))
    registry.upsert(spec(mediawiki.api_url, "t", BIG_TITLE, tenant_id="other"))
    assert registry.counts()["sources"] == 2          # nothing tells them apart before the wiki answers
    wait_for(lambda: all(status(registry, s).revisions == n for s in "rt"), 300, "both subscriptions")
    src = registry.source(spec(mediawiki.api_url, "t", BIG_TITLE).source_uuid)
    assert registry.counts() == {"subscribers": 2, "sources": 1}
    assert registry.source(spec(mediawiki.api_url, "r", REDIRECT_TITLE).source_uuid) is src
    page_key = str(source_uuid(mediawiki.api_url, BIG_TITLE))
    for sub_id in "rt":
        st = status(registry, sub_id)
        assert (st.state, st.last_rev_id, st.page_key) == ("running", src.page.last_rev_id, page_key)
    stored = list(store.history(wiki_key(mediawiki.api_url), src.page.page_id))
    assert len(stored) == len({r.rev_id for r in stored}) == n
    # one history fetched once, plus the other title's first request that told them apart
    requests_made = api_requests(metrics)
    print(f"\nredirect + target: {requests_made:.0f} API requests for {n} revisions")
    assert requests_made <= 1 + 2 + n // 500 + 1


def test_missing_title_is_a_failed_state_with_the_wikis_message(harness, mediawiki):
    registry, _ = harness
    registry.upsert(spec(mediawiki.api_url, "m", "No such article anywhere"))
    wait_for(lambda: status(registry, "m").state == "failed", 30, "the failed state")
    assert "does not exist" in status(registry, "m").last_error


def test_caught_up_page_is_revisited_with_prop_info_only(spawn_config, store, mediawiki):
    config = replace(spawn_config, revisit_min_s=0.2, revisit_max_s=0.3)
    metrics = SpawnMetrics()
    wikis = Wikis(config, http=mediawiki.session(), store=store, metrics=metrics)
    registry = Registry(wikis.make_source, orphan_after_s=60)
    try:
        title = "Spider silk"
        registry.upsert(spec(mediawiki.api_url, "s", title))
        src = registry.source(spec(mediawiki.api_url, "s", title).source_uuid)
        wait_for(lambda: src.complete, 60, "the harvest")
        harvest_requests = api_requests(metrics)
        batcher = wikis.batcher(mediawiki.api_url)
        wait_for(lambda: batcher.requests >= 3, 10, "three revisit checks")
        # unchanged lastrevid: only the cheap prop=info checks were sent, no revisions re-fetched; and, once
        # per longest revisit interval, the history listed without content for the completeness check
        checks = batcher.requests
        listed = sum(s.value for m in metrics.history_checks.collect() for s in m.samples
                     if s.name.endswith("_total")) * -(-len(mediawiki.expected.page(title).revisions) // 500)
        assert 0 <= api_requests(metrics) - harvest_requests - checks - listed <= 2     # one of each in flight
        assert src.written == len(mediawiki.expected.page(title).revisions)
    finally:
        registry.clear()
        wikis.stop()


def test_content_subscriber_after_a_metadata_harvest_gets_the_wikitext_backfilled(harness, store, mediawiki):
    registry, metrics = harness
    title = "Spider silk"
    n = len(mediawiki.expected.page(title).revisions)
    registry.upsert(spec(mediawiki.api_url, "meta", title))
    src = registry.source(spec(mediawiki.api_url, "meta", title).source_uuid)
    wait_for(lambda: src.complete, 60, "the metadata harvest")
    wiki = wiki_key(mediawiki.api_url)
    stored = list(store.history(wiki, src.page.page_id))
    assert store.content(wiki, stored[0].rev_id) is None
    registry.upsert(spec(mediawiki.api_url, "text", title, content=True))
    wait_for(lambda: store.content(wiki, stored[0].rev_id) is not None, 60, "the content backfill")
    assert all(store.content(wiki, r.rev_id) for r in stored[::50])
    assert src.written == n and status(registry, "text").revisions == n
