"""POST /v1/subscriptions with `kind: pages`: a list of titles in one call, created item by item; what
is refused is reported per item under 207, and a malformed request is refused whole, naming the field."""
import pytest

from blackwidow import validation
from shared.hashing import source_uuid
from tests.fixtures.hub import LOCAL_WIKI

GHOST = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"


def pages(api, tenant, titles, **extra):
    return api.simulate_post("/v1/subscriptions", json={
        "kind": "pages", "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "titles": titles, **extra})


def listed(api, tenant) -> list[str]:
    return [s["title"] for s in api.simulate_get("/v1/subscriptions", params={
        "tenant_id": tenant["id"], "limit": "1000"}).json["items"]]


def test_all_created_is_201_in_request_order(api, tenant):
    resp = pages(api, tenant, ["Alpha", "beta_gamma", "Delta"], quota=4, content=True)
    assert resp.status_code == 201
    answer = resp.json
    assert (answer["requested"], answer["refused"], answer["case"]) == (3, [], "first-letter")
    assert [(c["index"], c["title"]) for c in answer["created"]] == [(0, "Alpha"), (1, "beta_gamma"), (2, "Delta")]
    sub = api.simulate_get(f"/v1/subscriptions/{answer['created'][1]['id']}").json
    assert (sub["title"], sub["quota"], sub["content"], sub["state"]) == ("beta gamma", 4, True, "pending")
    assert sub["source_uuid"] == str(source_uuid(LOCAL_WIKI, "beta gamma"))
    assert listed(api, tenant) == ["Alpha", "beta gamma", "Delta"]


def test_partial_success_is_207_with_every_refusal_by_index(api, tenant):
    held = api.simulate_post("/v1/subscriptions", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI,
                                                        "title": "Held"}).json
    resp = pages(api, tenant, ["New", "held", "a[b]", "new", "Other_page", "Other page", "", "Last"])
    assert resp.status_code == 207
    assert [(c["index"], c["title"]) for c in resp.json["created"]] == [(0, "New"), (4, "Other_page"), (7, "Last")]
    assert [(r["index"], r["title"], r["field"], r["reason"], r["duplicate_of"], r["subscription_id"])
            for r in resp.json["refused"]] == [
        (1, "held", "title", "already_subscribed", None, held["id"]),
        (2, "a[b]", "title", "malformed_title", None, None),
        (3, "new", "title", "duplicate", 0, None),
        (5, "Other page", "title", "duplicate", 4, None),
        (6, "", "title", "malformed_title", None, None)]
    assert all(r["message"] for r in resp.json["refused"])
    assert listed(api, tenant) == ["Held", "New", "Other page", "Last"]


def test_sending_the_same_list_again_creates_nothing_and_says_why(api, tenant):
    assert pages(api, tenant, ["One", "Two"]).status_code == 201
    again = pages(api, tenant, ["one", "Two"])
    assert again.status_code == 207 and again.json["created"] == []
    assert [r["reason"] for r in again.json["refused"]] == ["already_subscribed"] * 2
    assert listed(api, tenant) == ["One", "Two"]


def test_a_case_sensitive_wiki_keeps_two_spellings_apart(api, tenant):
    resp = pages(api, tenant, ["apple", "Apple"], case="case-sensitive")
    assert resp.status_code == 201 and len(resp.json["created"]) == 2
    other = api.simulate_post("/v1/tenants", json={"name": "other"}).json
    theirs = pages(api, other, ["apple"])                   # another tenant shares the source
    assert theirs.status_code == 201


def test_thousands_of_titles_in_one_call(api, tenant):
    titles = [f"Page {i}" for i in range(validation.MAX_PAGES_TITLES)]
    resp = pages(api, tenant, titles)
    assert resp.status_code == 201 and len(resp.json["created"]) == validation.MAX_PAGES_TITLES
    again = pages(api, tenant, [t.lower() for t in titles[:3]] + ["Fresh"])
    assert [r["index"] for r in again.json["refused"]] == [0, 1, 2]
    assert [c["title"] for c in again.json["created"]] == ["Fresh"]


@pytest.mark.parametrize("extra, status, field", [
    ({"titles": ["A"] * (validation.MAX_PAGES_TITLES + 1)}, 422, "titles"),
    ({"titles": []}, 422, "titles"),
    ({"titles": ["A", 7]}, 422, "titles[1]"),
    ({"titles": ["A", {"title": "B"}]}, 422, "titles[1]"),
    ({"titles": "A"}, 422, "titles"),
    ({"case": "lower"}, 422, "case"),
    ({"tenant_id": GHOST}, 422, "tenant_id"),
    ({"wiki": "http://169.254.169.254/api.php"}, 422, "wiki"),
    ({"title": "A"}, 422, "title"),
    ({"kind": "tag"}, 422, "kind"),
])
def test_a_malformed_request_is_refused_whole(api, tenant, extra, status, field):
    resp = pages(api, tenant, **{"titles": ["A"], **extra})
    assert (resp.status_code, resp.json["error"]["field"]) == (status, field), extra
    assert listed(api, tenant) == []


def test_a_body_that_is_not_json_is_400(api):
    resp = api.simulate_post("/v1/subscriptions", body=b'{"kind": "pages", "titles": [',
                             headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and resp.json["error"]["code"] == "bad_request"


def test_one_article_still_works_and_may_name_its_kind(api, tenant):
    resp = api.simulate_post("/v1/subscriptions", json={"kind": "page", "tenant_id": tenant["id"],
                                                        "wiki": LOCAL_WIKI, "title": "Solo"})
    assert resp.status_code == 201 and resp.json["title"] == "Solo"
    mixed = api.simulate_post("/v1/subscriptions", json={"kind": "page", "tenant_id": tenant["id"],
                                                         "wiki": LOCAL_WIKI, "titles": ["A"]})
    assert (mixed.status_code, mixed.json["error"]["field"]) == (422, "titles")
