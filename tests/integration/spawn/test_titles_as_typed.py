"""A title reaches the real wiki exactly as typed, and the wiki's resolution, not the hub, decides that
'synthetic article 1' (the seeded wiki has $wgCapitalLinks = true) is 'Synthetic article 1': both
subscriptions end on one fetcher through the spawn's page key."""
import pytest

from shared.hashing import source_uuid, wiki_key
from tests.integration.spawn.registries import recorded_registry
from tests.integration.spawn.test_harvest import spec, status, wait_for
from tools.wikigen import BIG_TITLE

pytestmark = pytest.mark.integration

TYPED = BIG_TITLE[0].lower() + BIG_TITLE[1:]         # 'synthetic article 1'


@pytest.fixture
def recorded(spawn_config, store, mediawiki):
    """A registry whose wiki session records the `titles` of every history request it sends."""
    with recorded_registry(spawn_config, mediawiki.session(), store) as recording:
        yield recording


def test_a_lower_case_title_reaches_the_wiki_unchanged_and_merges_with_the_canonical_one(recorded, store,
                                                                                         mediawiki):
    registry, asked = recorded
    n = len(mediawiki.expected.page(BIG_TITLE).revisions)
    assert source_uuid(mediawiki.api_url, TYPED) != source_uuid(mediawiki.api_url, BIG_TITLE)
    registry.upsert(spec(mediawiki.api_url, "typed", TYPED))
    registry.upsert(spec(mediawiki.api_url, "canonical", BIG_TITLE, tenant_id="other"))
    wait_for(lambda: all(status(registry, s).revisions == n for s in ("typed", "canonical")), 300,
             "both subscriptions")

    assert any("titles=synthetic+article+1" in url for url in asked), asked[:3]      # sent as typed
    src = registry.source(spec(mediawiki.api_url, "canonical", BIG_TITLE).source_uuid)
    assert src.page.title == BIG_TITLE                                              # the wiki's answer
    assert registry.counts() == {"subscribers": 2, "sources": 1}
    assert registry.source(spec(mediawiki.api_url, "typed", TYPED).source_uuid) is src
    page_key = str(source_uuid(mediawiki.api_url, BIG_TITLE))
    assert {status(registry, s).page_key for s in ("typed", "canonical")} == {page_key}
    stored = list(store.history(wiki_key(mediawiki.api_url), src.page.page_id))
    assert len(stored) == len({r.rev_id for r in stored}) == n
