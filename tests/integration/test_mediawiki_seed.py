"""The seeded local MediaWiki serves exactly the histories tools.wikigen wrote, change tags included."""
import hashlib

import pytest

from tools.wikigen import BIG_TITLE, REDIRECT_TITLE, REVERT_TAG, UNICODE_TITLE

pytestmark = pytest.mark.integration

META = "ids|timestamp|user|userid|size|sha1|comment|flags|tags"


def _get(http, api_url, params):
    resp = http.get(api_url, params={"format": "json", "formatversion": "2", **params}, timeout=(3, 30))
    resp.raise_for_status()
    body = resp.json()
    assert "error" not in body, body["error"]
    return body


def _history(http, api_url, title, rvprop=META, rvlimit="max", **extra):
    """All revisions oldest-first, following the whole `continue` object; returns (revisions, requests)."""
    params = {"action": "query", "prop": "revisions", "titles": title, "rvprop": rvprop,
              "rvlimit": rvlimit, "rvdir": "newer", **extra}
    revisions, requests_made, cont = [], 0, {}
    while True:
        body = _get(http, api_url, {**params, **cont})
        requests_made += 1
        (page,) = body["query"]["pages"]
        assert "missing" not in page, title
        revisions.extend(page.get("revisions", []))
        if "continue" not in body:
            return revisions, requests_made
        cont = body["continue"]


def _as_expected(rev):
    return (rev["timestamp"], rev["user"], rev.get("anon", False), rev["minor"], rev["comment"],
            rev["size"], rev["sha1"], tuple(sorted(rev["tags"])))


def _expected_rows(page):
    return [(r.timestamp, r.user, r.anon, r.minor, r.comment, r.size, r.sha1, r.tags)
            for r in page.revisions]


@pytest.fixture(scope="module")
def http(mediawiki):
    with mediawiki.session() as session:
        yield session


def test_big_article_every_revision_across_continuation(mediawiki, http):
    page = mediawiki.expected.page(BIG_TITLE)
    assert len(page.revisions) >= 5000
    got, requests_made = _history(http, mediawiki.api_url, BIG_TITLE)
    assert requests_made >= len(page.revisions) // 500
    assert [_as_expected(r) for r in got] == _expected_rows(page)
    revids = [r["revid"] for r in got]
    assert len(set(revids)) == len(revids)


def test_every_page_history_matches(mediawiki, http):
    for page in mediawiki.expected.pages:
        got, _ = _history(http, mediawiki.api_url, page.title)
        assert [_as_expected(r) for r in got] == _expected_rows(page), page.title


def test_the_wiki_serves_exactly_the_generated_tags(mediawiki, http):
    generated = {(p.title, r.timestamp): r.tags
                 for p in mediawiki.expected.pages for r in p.revisions if r.tags}
    assert len(generated) > 100 and {t for tags in generated.values() for t in tags} == {REVERT_TAG}
    served, cont = {}, {}
    while True:
        body = _get(http, mediawiki.api_url, {"action": "query", "list": "allrevisions",
                                              "arvprop": "timestamp|tags", "arvlimit": "max", **cont})
        served.update({(p["title"], r["timestamp"]): tuple(sorted(r["tags"]))
                       for p in body["query"]["allrevisions"] for r in p["revisions"] if r["tags"]})
        if "continue" not in body:
            break
        cont = body["continue"]
    assert served == generated
    body = _get(http, mediawiki.api_url, {"action": "query", "list": "tags", "tglimit": "max",
                                          "tgprop": "defined|source"})
    manual = [t["name"] for t in body["query"]["tags"] if "manual" in t["source"] and t["defined"]]
    assert manual == [REVERT_TAG]


def test_registered_users_have_ids_and_ips_are_anon(mediawiki, http):
    got, _ = _history(http, mediawiki.api_url, BIG_TITLE)
    anon = [r for r in got if r.get("anon")]
    registered = [r for r in got if not r.get("anon")]
    assert anon and registered
    assert all(r["userid"] == 0 for r in anon)
    assert all(r["userid"] > 0 for r in registered)
    assert any(":" in r["user"] for r in anon) and any("." in r["user"] for r in anon)
    assert len({r["user"] for r in registered}) >= 100


def test_redirect_resolves(mediawiki, http):
    assert mediawiki.expected.page(REDIRECT_TITLE).is_redirect
    body = _get(http, mediawiki.api_url, {"action": "query", "titles": REDIRECT_TITLE, "redirects": "1"})
    assert body["query"]["redirects"] == [{"from": REDIRECT_TITLE, "to": BIG_TITLE}]
    assert body["query"]["pages"][0]["title"] == BIG_TITLE
    body = _get(http, mediawiki.api_url, {"action": "query", "prop": "info", "titles": REDIRECT_TITLE})
    assert body["query"]["pages"][0]["redirect"] is True


def test_unicode_title_found_with_its_content(mediawiki, http):
    page = mediawiki.expected.page(UNICODE_TITLE)
    body = _get(http, mediawiki.api_url, {"action": "query", "prop": "info", "titles": UNICODE_TITLE})
    (info,) = body["query"]["pages"]
    assert info["title"] == UNICODE_TITLE and "missing" not in info
    assert info["length"] == page.revisions[-1].size
    # The text itself round-trips: every revision's content hashes to the expected sha1.
    got, _ = _history(http, mediawiki.api_url, UNICODE_TITLE, rvprop="content", rvlimit="max", rvslots="main")
    assert [hashlib.sha1(r["slots"]["main"]["content"].encode("utf-8")).hexdigest() for r in got] == \
        [r.sha1 for r in page.revisions]
