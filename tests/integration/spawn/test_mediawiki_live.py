"""The MediaWiki client against the real wiki: maxlag as the server really sends it, and title handling."""
from datetime import datetime

import pytest

from spawn.host_limiter import Backoff, HostLimiter
from spawn.mediawiki import Maxlagged, MediaWikiClient, PageUnavailable
from tools.wikigen import BIG_TITLE, REDIRECT_TITLE, UNICODE_TITLE

pytestmark = pytest.mark.integration


@pytest.fixture
def client(mediawiki):
    return MediaWikiClient(mediawiki.session(), mediawiki.api_url, limiter=HostLimiter(0.0), maxlag=5,
                           backoff=Backoff(base_s=0.01, cap_s=0.01), max_attempts=1)


def test_real_maxlag_error_is_recognised_with_retry_after(client, mediawiki):
    mediawiki.set_fake_lag(12)
    try:
        with pytest.raises(Maxlagged) as info:
            client.resolve(BIG_TITLE)
    finally:
        mediawiki.set_fake_lag(None)
    assert info.value.retry_after == 5.0 and info.value.lag == 12
    assert client.resolve(BIG_TITLE).title == BIG_TITLE         # and it passes once the lag is gone


def test_titles_are_normalised_and_redirects_followed_as_the_wiki_says(client):
    assert client.resolve("synthetic_article_1").title == BIG_TITLE
    assert client.resolve(REDIRECT_TITLE).title == BIG_TITLE
    assert client.resolve(UNICODE_TITLE).title == UNICODE_TITLE


@pytest.mark.parametrize("title, message", [("Foo[bar]", "invalid characters"), ("Talk:", "invalid title"),
                                            ("Nothing here at all", "does not exist"),
                                            ("Special:Version", "not an article")])
def test_unusable_titles_raise_page_unavailable_with_the_wikis_reason(client, title, message):
    with pytest.raises(PageUnavailable, match=message):
        client.resolve(title)


def test_batched_change_detection_answers_for_50_pages_in_one_request(client, mediawiki):
    ids = {client.resolve(p.title).page_id: p for p in mediawiki.expected.pages[:5] if not p.is_redirect}
    latest = client.last_rev_ids(list(ids) + [999_999])
    assert latest[999_999] is None and all(latest[i] for i in ids)


@pytest.mark.parametrize("content, cap", [(False, 500), (True, 50)])
def test_the_opening_resolves_a_redirect_and_the_history_goes_on_by_page_id(client, mediawiki, content, cap):
    opening = client.open_history(REDIRECT_TITLE, content=content)
    assert opening.page.title == BIG_TITLE and len(opening.batch) == cap and opening.more["rvcontinue"]
    batches = client.continue_history(opening)
    got = [(r.timestamp, r.sha1) for b in (next(batches), next(batches)) for r in b]
    assert got == expected(mediawiki)[:2 * cap]


def test_an_opening_from_a_start_includes_that_revision(client, mediawiki):
    revs = expected(mediawiki)
    page = client.resolve(BIG_TITLE)
    opening = client.open_history("synthetic_article_1", page_id=page.page_id, start=revs[-3][0])
    assert [(r.timestamp, r.sha1) for r in opening.batch] == revs[-3:] and opening.more is None
    assert client.open_history(BIG_TITLE, page_id=page.page_id + 10_000, start=revs[-1][0]).batch is None


def expected(mediawiki) -> list[tuple[datetime, str]]:
    revisions = mediawiki.expected.page(BIG_TITLE).revisions
    return [(datetime.fromisoformat(r.timestamp), r.sha1) for r in revisions]


@pytest.mark.parametrize("title, message", [("Foo[bar]", "invalid characters"),
                                            ("Nothing here at all", "does not exist"),
                                            ("Special:Version", "not an article")])
def test_unusable_titles_fail_the_opening_too(client, title, message):
    with pytest.raises(PageUnavailable, match=message):
        client.open_history(title)
