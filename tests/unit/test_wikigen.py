"""Properties of the synthetic wiki generator; no server needed."""
import hashlib
import ipaddress
import statistics
import xml.etree.ElementTree as ET
from datetime import datetime

import pytest

from tools import wikigen
from tools.wikigen import BIG_TITLE, REDIRECT_TITLE, UNICODE_TITLE

NS = "{http://www.mediawiki.org/xml/export-0.11/}"


@pytest.fixture(scope="module")
def wiki():
    return wikigen.generate(7)


@pytest.fixture(scope="module")
def written(wiki, tmp_path_factory):
    out = tmp_path_factory.mktemp("wikigen")
    wikigen.write(wiki, out)
    return out


def _epoch(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def test_same_seed_same_wiki_other_seed_other_wiki(wiki):
    assert wikigen.generate(7) == wiki
    assert wikigen.generate(8).pages[0].revisions != wiki.pages[0].revisions


def test_shape_of_the_wiki(wiki):
    articles = [p for p in wiki.pages if p.ns == 0 and not p.is_redirect]
    assert len(articles) >= 20
    assert wiki.biggest.title == BIG_TITLE and len(wiki.biggest.revisions) >= 5000
    assert sum(100 <= len(p.revisions) <= 1000 for p in wiki.pages) >= 3
    assert any(len(p.revisions) == 1 for p in wiki.pages)
    assert not UNICODE_TITLE.isascii() and wiki.page(UNICODE_TITLE).revisions
    assert len({p.title for p in wiki.pages}) == len(wiki.pages)


def test_redirect_points_at_an_existing_article(wiki):
    redirect = wiki.page(REDIRECT_TITLE)
    assert redirect.is_redirect and redirect.redirect_target == BIG_TITLE
    assert redirect.revisions[-1].text.startswith(f"#REDIRECT [[{BIG_TITLE}]]")
    assert not any(p.is_redirect for p in wiki.pages if p.title != REDIRECT_TITLE)


def test_editors_are_accounts_or_normalised_ips(wiki):
    revs = [r for p in wiki.pages for r in p.revisions]
    assert len(set(wiki.users)) == len(wiki.users) >= 300
    registered = {r.user for r in revs if not r.anon}
    assert registered <= set(wiki.users) and len(registered) >= 200
    ips = {r.user for r in revs if r.anon}
    assert len(ips) >= 50
    for ip in ips:
        addr = ipaddress.ip_address(ip)
        if addr.version == 6:
            # MediaWiki's IPUtils::sanitizeIP form, which is what the API reports
            assert ip == ":".join(f"{int(g, 16):X}" for g in addr.exploded.split(":"))
    assert {4, 6} == {ipaddress.ip_address(ip).version for ip in ips}
    assert not any(r.minor for r in revs if r.anon)


def test_timestamps_strictly_increase_and_are_bursty(wiki):
    for page in wiki.pages:
        stamps = [_epoch(r.timestamp) for r in page.revisions]
        assert all(a < b for a, b in zip(stamps, stamps[1:])), page.title
    big = [_epoch(r.timestamp) for r in wiki.biggest.revisions]
    assert big[-1] - big[0] > 5 * 365 * 86400
    gaps = [b - a for a, b in zip(big, big[1:])]
    # exponential gaps have a coefficient of variation of 1; regime switching makes it larger
    assert statistics.pstdev(gaps) / statistics.mean(gaps) > 1.5
    assert min(gaps) < 600 and max(gaps) > 7 * 86400


def test_sizes_sha1_and_variety(wiki):
    revs = [r for p in wiki.pages for r in p.revisions]
    for r in revs:
        data = r.text.encode("utf-8")
        assert r.size == len(data) and r.sha1 == hashlib.sha1(data).hexdigest()
    assert any(r.size != len(r.text) for r in revs)          # multi-byte text
    assert max(r.size for r in revs) > 20_000 and min(r.size for r in revs) < 100
    assert any(r.comment == "" for r in revs) and any(r.comment for r in revs)
    assert 0.05 < sum(r.minor for r in revs) / len(revs) < 0.5


def test_reverts_and_only_they_carry_the_revert_tag(wiki):
    revs = [r for p in wiki.pages for r in p.revisions]
    tagged = [r for r in revs if r.tags]
    assert len(tagged) > 100 and all(r.tags == (wikigen.REVERT_TAG,) for r in tagged)
    # each follows the IP edit it reverts and restores the text before it
    for page in wiki.pages:
        for i, r in enumerate(page.revisions):
            if r.tags:
                assert page.revisions[i - 1].anon and r.sha1 == page.revisions[i - 2].sha1 and not r.anon


def test_sha1_base36_matches_dump_convention():
    assert wikigen.sha1_base36("") == "phoiac9h4m842xq45sp7s6u21eteeq1"
    assert wikigen.sha1_base36("Hello, world!") == "hbbvduyzg9rvcn7s9tgwxvh7c4u19y1"


def test_expected_file_round_trips_without_text(wiki, written):
    loaded = wikigen.load_expected(written / wikigen.EXPECTED_FILE)
    assert loaded == wikigen.without_text(wiki)
    assert any(r.tags for p in loaded.pages for r in p.revisions)
    assert loaded.generator_version == wikigen.GENERATOR_VERSION and loaded.seed == 7
    assert (written / wikigen.EXPECTED_FILE).stat().st_size < 2_000_000


def test_dump_is_schema_0_11_with_consistent_revisions(wiki, written):
    assert (written / wikigen.USERS_FILE).read_text(encoding="utf-8").splitlines() == list(wiki.users)
    assert (written / wikigen.DUMP_FILE).stat().st_size < 60_000_000
    pages = iter(wiki.pages)
    for _, el in ET.iterparse(written / wikigen.DUMP_FILE):
        if el.tag != NS + "page":
            continue
        page = next(pages)
        assert el.findtext(NS + "title") == page.title and int(el.findtext(NS + "ns")) == page.ns
        xml_revs = el.findall(NS + "revision")
        assert len(xml_revs) == len(page.revisions)
        for x, r in zip(xml_revs, page.revisions):
            text = x.findtext(NS + "text") or ""
            assert text == r.text and int(x.find(NS + "text").get("bytes")) == r.size
            assert x.findtext(NS + "sha1") == wikigen.sha1_base36(text)
            assert x.findtext(NS + "timestamp") == r.timestamp
            contributor = x.find(NS + "contributor")
            assert contributor.findtext(NS + ("ip" if r.anon else "username")) == r.user
            assert (x.find(NS + "minor") is not None) == r.minor
            assert (x.findtext(NS + "comment") or "") == r.comment
        el.clear()
    assert next(pages, None) is None
