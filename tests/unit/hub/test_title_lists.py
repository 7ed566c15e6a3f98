"""The `pages` kind's pure rules: what refuses the whole request, and item by item what is created and
what is refused, with which reason."""
import pytest

from blackwidow import title_lists, validation
from blackwidow.title_lists import DUPLICATE, HELD, MALFORMED, PagesRequest
from shared.errors import ValidationError
from shared.hashing import source_uuid

ALLOW = ("*.wikipedia.org", "*.wiktionary.org")
ENWIKI = "https://en.wikipedia.org/w/api.php"
WIKTIONARY = "https://en.wiktionary.org/w/api.php"
TENANT = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
HELD_ID = "9d2c5a0e-0000-4000-8000-000000000001"


def body(**extra) -> dict:
    return {"kind": "pages", "tenant_id": TENANT, "wiki": ENWIKI, "titles": ["A"], **extra}


def request(titles, case="first-letter", wiki=ENWIKI) -> PagesRequest:
    return PagesRequest(tenant_id=TENANT, wiki=wiki, titles=tuple(titles), case=case, quota=None,
                        content=False, enabled=True)


def test_parse_applies_defaults_and_canonical_values():
    parsed = title_lists.parse_pages(body(wiki="HTTPS://EN.wikipedia.org/w/api.php", titles=["a", " b_"],
                                          tenant_id=TENANT.upper()), ALLOW)
    assert parsed == PagesRequest(tenant_id=TENANT, wiki=ENWIKI, titles=("a", " b_"), case="first-letter",
                                  quota=None, content=False, enabled=True)
    given = title_lists.parse_pages(body(case="case-sensitive", quota=7, content=True, enabled=False), ALLOW)
    assert (given.case, given.quota, given.content, given.enabled) == ("case-sensitive", 7, True, False)


@pytest.mark.parametrize("bad, field", [
    ({"titles": []}, "titles"),
    ({"titles": ["A"] * (validation.MAX_PAGES_TITLES + 1)}, "titles"),
    ({"titles": "A"}, "titles"),
    ({"titles": ["A", "B", 3]}, "titles[2]"),
    ({"titles": ["A", None]}, "titles[1]"),
    ({"titles": [["A"]]}, "titles[0]"),
    ({"titles": None}, "titles"),
    ({"case": "upper"}, "case"),
    ({"tenant_id": "x"}, "tenant_id"),
    ({"wiki": "http://10.0.0.1/api.php"}, "wiki"),
    ({"quota": -1}, "quota"),
    ({"title": "A"}, "title"),                 # the one-article field is unknown here
    ({"items": [{"title": "A"}]}, "items"),
])
def test_a_malformed_request_is_refused_whole_naming_the_field(bad, field):
    with pytest.raises(ValidationError) as err:
        title_lists.parse_pages(body(**bad), ALLOW)
    assert err.value.field == field


def test_the_maximum_itself_is_accepted():
    titles = [f"P{i}" for i in range(validation.MAX_PAGES_TITLES)]
    assert len(title_lists.parse_pages(body(titles=titles), ALLOW).titles) == validation.MAX_PAGES_TITLES


@pytest.mark.parametrize("body_, kind", [
    ({"tenant_id": TENANT}, "page"), ({"kind": "page"}, "page"), ({"kind": "pages"}, "pages"), ([1], "page"),
])
def test_the_kind_of_a_subscription_body(body_, kind):
    assert validation.subscription_kind(body_) == kind


@pytest.mark.parametrize("kind", ["tag", "Category", "Pages", 1, None])
def test_an_unknown_kind_names_the_field(kind):
    with pytest.raises(ValidationError) as err:
        validation.subscription_kind({"kind": kind})
    assert err.value.field == "kind"


@pytest.mark.parametrize("title, case, key", [
    ("apple", "first-letter", "Apple"),
    ("Apple", "first-letter", "Apple"),
    ("apple", "case-sensitive", "apple"),
    ("éclair", "first-letter", "Éclair"),
    ("ßtraße", "first-letter", "ßtraße"),        # its capital is two letters: left as it is
    ("iPhone", "first-letter", "IPhone"),
    ("1 apple", "first-letter", "1 apple"),
])
def test_title_key(title, case, key):
    assert title_lists.title_key(title, case) == key


def outcome(decided) -> list[tuple]:
    """(index, what happened) in request order."""
    rows = [(i, "created", new.title) for i, new in decided.creates]
    rows += [(r.index, r.reason, r.subscription_id if r.duplicate_of is None else r.duplicate_of)
             for r in decided.refusals]
    return sorted(rows)


@pytest.mark.parametrize("titles, case, held, expected", [
    (["A", "B"], "first-letter", {},
     [(0, "created", "A"), (1, "created", "B")]),
    # spellings the wiki reads as one page: '_' and spaces, surrounding spaces, a lower-case first letter;
    # past the first letter the case is the page's own
    (["Main Page", "Main_Page", " main_Page ", "main page", "Main page"], "first-letter", {},
     [(0, "created", "Main Page"), (1, DUPLICATE, 0), (2, DUPLICATE, 0), (3, "created", "main page"),
      (4, DUPLICATE, 3)]),
    # on a case-sensitive wiki 'apple' and 'Apple' are two pages
    (["apple", "Apple", "apple_"], "case-sensitive", {},
     [(0, "created", "apple"), (1, "created", "Apple"), (2, DUPLICATE, 0)]),
    (["", "a#b", "x" * 256, "ok", "a\nb"], "first-letter", {},
     [(0, MALFORMED, None), (1, MALFORMED, None), (2, MALFORMED, None), (3, "created", "ok"),
      (4, MALFORMED, None)]),
    # held under another spelling of the same page
    (["apple", "Pear"], "first-letter", {"Apple": HELD_ID},
     [(0, HELD, HELD_ID), (1, "created", "Pear")]),
    (["apple"], "case-sensitive", {"Apple": HELD_ID},
     [(0, "created", "apple")]),
    # a held page named twice: both are reported as held, not one as a duplicate
    (["Apple", "apple"], "first-letter", {"Apple": HELD_ID},
     [(0, HELD, HELD_ID), (1, HELD, HELD_ID)]),
    # a malformed item does not take a key: a later good spelling is created
    (["a|b", "A b"], "first-letter", {},
     [(0, MALFORMED, None), (1, "created", "A b")]),
])
def test_plan_item_by_item(titles, case, held, expected):
    assert outcome(title_lists.plan(request(titles, case), held)) == expected


def test_created_items_carry_the_request_values_and_the_source_of_the_title_as_typed():
    req = PagesRequest(tenant_id=TENANT, wiki=ENWIKI, titles=("apple_pie",), case="first-letter", quota=3,
                       content=True, enabled=False)
    [(index, new)] = title_lists.plan(req, {}).creates
    assert (index, new.title, new.quota, new.content, new.enabled) == (0, "apple pie", 3, True, False)
    assert new.source_uuid == str(source_uuid(ENWIKI, "apple pie"))      # the case as typed, as for one page


def test_held_sources_cover_every_spelling_the_wiki_reads_alike():
    sources = title_lists.held_sources(request(["apple", "a|b", "Pear"]))
    assert sources == {str(source_uuid(ENWIKI, t)) for t in ("apple", "Apple", "Pear", "pear")}
    strict = title_lists.held_sources(request(["apple"], "case-sensitive", WIKTIONARY))
    assert strict == {str(source_uuid(WIKTIONARY, "apple"))}


def test_result_reports_each_item_by_its_index_and_title_as_sent():
    req = request(["A_b", "a b", "x]"])
    decided = title_lists.plan(req, {})
    answer = title_lists.result(req, decided, ["id-0"])
    assert answer["created"] == [{"index": 0, "title": "A_b", "id": "id-0"}]
    assert [(r["index"], r["title"], r["field"], r["reason"], r["duplicate_of"]) for r in answer["refused"]] == [
        (1, "a b", "title", DUPLICATE, 0), (2, "x]", "title", MALFORMED, None)]
    assert (answer["requested"], answer["case"], answer["kind"]) == (3, "first-letter", "pages")
