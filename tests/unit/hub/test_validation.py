import pytest

from blackwidow import validation
from shared.errors import ValidationError
from shared.hashing import source_uuid

ALLOW = ("*.wikipedia.org",)
ENWIKI = "https://en.wikipedia.org/w/api.php"
TENANT = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"


def refused(fn, *args) -> ValidationError:
    with pytest.raises(ValidationError) as err:
        fn(*args)
    return err.value


@pytest.mark.parametrize("title, field", [
    ("", "title"), ("   ", "title"), ("a#b", "title"), ("a<b", "title"), ("a>b", "title"), ("a[b", "title"),
    ("a]b", "title"), ("a|b", "title"), ("a{b", "title"), ("a}b", "title"), ("a\x00b", "title"),
    ("a\nb", "title"), ("x" * 256, "title"), ("é" * 128, "title"),     # 256 UTF-8 bytes
])
def test_bad_titles(title, field):
    assert refused(validation.check_title, title).field == field


def test_title_limits_count_utf8_bytes_after_normalization():
    assert validation.check_title("é" * 127 + "e") == "é" * 127 + "e"
    assert validation.check_title("x" * 255) == "x" * 255
    assert validation.check_title(" " + "x" * 255 + "_") == "x" * 255
    assert validation.check_title("  main_page  ") == "main page"           # the case as typed


def test_a_title_is_sent_as_typed():
    for typed, kept in (("apple", "apple"), ("iPhone", "iPhone"), ("Synthetic_article 1", "Synthetic article 1"),
                        ("synthetic  article_1 ", "synthetic article 1")):
        assert validation.check_title(typed) == kept


def test_unknown_and_missing_fields_are_named():
    assert refused(validation.parse, {"name": "a", "colour": 1}, validation.TENANT_CREATE).field == "colour"
    assert refused(validation.parse, {"quota": 1}, validation.TENANT_CREATE).field == "name"
    assert refused(validation.parse, [1], validation.TENANT_CREATE).field is None


@pytest.mark.parametrize("quota", [-1, 1.5, "3", True, 2**63])
def test_bad_quota(quota):
    assert refused(validation.parse, {"name": "a", "quota": quota}, validation.TENANT_CREATE).field == "quota"


def test_null_quota_means_unlimited_and_absent_fields_stay_absent():
    body = {"name": "a", "quota": None}
    assert validation.parse(body, validation.TENANT_CREATE) == body
    assert validation.parse({}, validation.SUBSCRIPTION_PATCH) == {}


def test_subscription_is_canonical_and_shares_the_source_uuid():
    new = validation.parse_subscription(
        {"tenant_id": TENANT.upper(), "wiki": "HTTPS://EN.wikipedia.org/w/api.php", "title": "foo_bar"},
        ALLOW)
    assert (new.tenant_id, new.wiki, new.title) == (TENANT, ENWIKI, "foo bar")
    assert new.source_uuid == str(source_uuid(ENWIKI, " foo bar"))
    assert (new.quota, new.content, new.enabled) == (None, False, True)


@pytest.mark.parametrize("body, field", [
    ({"tenant_id": "nope", "wiki": ENWIKI, "title": "A"}, "tenant_id"),
    ({"tenant_id": TENANT, "wiki": "http://10.0.0.1/api.php", "title": "A"}, "wiki"),
    ({"tenant_id": TENANT, "wiki": ENWIKI, "title": "A", "content": "yes"}, "content"),
    ({"tenant_id": TENANT, "wiki": ENWIKI, "title": 5}, "title"),
    ({"tenant_id": TENANT, "wiki": ENWIKI}, "title"),
    ({"tenant_id": TENANT, "wiki": ENWIKI, "title": "A", "state": "running"}, "state"),
])
def test_bad_subscriptions(body, field):
    assert refused(validation.parse_subscription, body, ALLOW).field == field


def test_bulk_merges_defaults_and_reports_every_bad_item():
    news = validation.parse_bulk({"tenant_id": TENANT, "wiki": ENWIKI, "quota": 5, "items": [
        {"title": "A"}, {"title": "B", "quota": None}, {"title": "C", "quota": 9, "content": True}]}, ALLOW)
    assert [(n.title, n.quota, n.content) for n in news] == \
        [("A", 5, False), ("B", None, False), ("C", 9, True)]
    err = refused(validation.parse_bulk, {"tenant_id": TENANT, "items": [
        {"title": "A", "wiki": ENWIKI}, {"title": "B"}, {"title": "C|", "wiki": ENWIKI},
        {"title": "D", "x": 1}, "E"]}, ALLOW)
    assert err.field == "items" and err.status.startswith("422")
    assert [(e["index"], e["field"]) for e in err.to_dict()["error"]["items"]] == [
        (1, "wiki"), (2, "title"), (3, "x"), (4, None)]


def test_bulk_needs_items():
    assert refused(validation.parse_bulk, {"items": []}, ALLOW).field == "items"
    too_many = {"items": [{}] * (validation.MAX_BULK_ITEMS + 1)}
    assert refused(validation.parse_bulk, too_many, ALLOW).field == "items"


def test_query_parameters():
    assert refused(validation.parse_query, {"limt": "3"}, ("limit",)).field == "limt"
    assert refused(validation.parse_query, {"limit": ["1", "2"]}, ("limit",)).field == "limit"
    for bad in ("0", "-1", "1001", "x", "1.5"):
        assert refused(validation.parse_limit, bad).field == "limit"
    assert validation.parse_limit(None) == validation.DEFAULT_LIMIT
    assert refused(validation.parse_state, "sleeping").field == "state"
