"""Fault paths of the MediaWiki client with `responses`, using bodies recorded from MediaWiki 1.39."""
import json
import pathlib
from datetime import datetime, timezone

import pytest
import requests
import responses

from spawn.host_limiter import Backoff, HostLimiter
from spawn.mediawiki import (ApiError, BadResponse, Maxlagged, MediaWikiClient, PageInfo, PageUnavailable,
                             RateLimited, ServerError)
from tests.unit.spawn.fakes import FakeClock

API = "http://wiki.test/w/api.php"
RECORDED = pathlib.Path(__file__).parents[4] / "shared" / "data" / "mw139-recorded-api-responses.json"


def recorded(name: str) -> dict:
    for item in json.loads(RECORDED.read_text())["responses"]:
        if item["name"] == name:
            return item
    raise KeyError(name)


def ok_info(title="Page", pageid=7, lastrevid=99):
    return {"batchcomplete": True, "query": {"pages": [{"pageid": pageid, "ns": 0, "title": title,
                                                        "lastrevid": lastrevid}]}}


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def client(clock):
    limiter = HostLimiter(0.1, clock=clock, sleep=clock.sleep)
    return MediaWikiClient(requests.Session(), API, limiter=limiter, maxlag=5,
                           backoff=Backoff(base_s=1.0, cap_s=60.0, rand=lambda: 1.0), max_attempts=4)


@responses.activate
def test_429_with_retry_after_is_honoured_then_succeeds(client, clock):
    responses.get(API, status=429, headers={"Retry-After": "17"}, body="slow down")
    responses.get(API, json=ok_info())
    retries = []
    page = client.resolve("Page", on_retry=lambda exc, d: retries.append((type(exc), d)))
    assert page == PageInfo(7, 0, "Page", 99)
    assert retries == [(RateLimited, 17.0)]
    assert sum(clock.slept) >= 17.0
    assert len(responses.calls) == 2


@responses.activate
def test_maxlag_error_backs_off_at_least_retry_after(client, clock):
    rec = recorded("error_maxlag_fv2_plaintext")
    responses.get(API, json=rec["body"], headers=rec["headers"])
    responses.get(API, json=ok_info())
    errors = []
    client.resolve("Page", on_retry=lambda exc, d: errors.append(exc))
    assert isinstance(errors[0], Maxlagged) and errors[0].lag == 12 and errors[0].retry_after == 5.0
    assert "12 seconds lagged" in str(errors[0])
    assert sum(clock.slept) >= 5.0
    sent = responses.calls[0].request.params
    assert sent["maxlag"] == "5" and sent["formatversion"] == "2" and sent["errorformat"] == "plaintext"


@responses.activate
def test_maxlag_error_in_bc_format_is_understood_too(client):
    rec = recorded("error_maxlag")
    responses.get(API, json=rec["body"], headers=rec["headers"])
    responses.get(API, json=ok_info())
    errors = []
    client.resolve("Page", on_retry=lambda exc, d: errors.append(exc))
    assert isinstance(errors[0], Maxlagged)


@responses.activate
def test_truncated_json_is_retried_and_reported(client):
    body = json.dumps(ok_info())
    responses.get(API, body=body[: len(body) // 2], content_type="application/json")
    responses.get(API, json=ok_info())
    errors = []
    assert client.resolve("Page", on_retry=lambda exc, d: errors.append(exc)).page_id == 7
    assert isinstance(errors[0], BadResponse) and "JSON" in str(errors[0])


@responses.activate
def test_html_503_is_retried_with_backoff_growing(client, clock):
    html = "<html><body><h1>503 Service Unavailable</h1></body></html>"
    for _ in range(3):
        responses.get(API, status=503, body=html, content_type="text/html")
    responses.get(API, json=ok_info())
    delays = []
    client.resolve("Page", on_retry=lambda exc, d: delays.append(d))
    assert delays == [1.0, 2.0, 4.0]


@responses.activate
def test_html_page_with_status_200_is_a_bad_response(client):
    responses.get(API, status=200, body="<html>maintenance</html>", content_type="text/html")
    responses.get(API, json=ok_info())
    errors = []
    client.resolve("Page", on_retry=lambda exc, d: errors.append(exc))
    assert isinstance(errors[0], BadResponse) and "text/html" in str(errors[0])


@responses.activate
def test_attempts_are_bounded(client):
    for _ in range(4):
        responses.get(API, status=502, body="bad gateway", content_type="text/plain")
    with pytest.raises(ServerError):
        client.resolve("Page")
    assert len(responses.calls) == 4


@responses.activate
def test_other_api_errors_are_not_retried(client):
    rec = recorded("error_badcontinue")
    responses.get(API, json=rec["body"], headers=rec["headers"])
    with pytest.raises(ApiError) as info:
        client.resolve("Page")
    assert info.value.code == "badcontinue" and len(responses.calls) == 1


@responses.activate
def test_revision_with_a_missing_field_is_never_yielded(client):
    page = PageInfo(2, 0, "Anarchism", 15181)
    good = recorded("revisions_first_batch")["body"]
    broken = json.loads(json.dumps(good))
    del broken["query"]["pages"][0]["revisions"][2]["timestamp"]
    broken.pop("continue")
    responses.get(API, json=broken)
    good.pop("continue")
    responses.get(API, json=good)
    batches = list(client.revision_batches(page))
    assert [len(b) for b in batches] == [5]
    assert batches[0][2].timestamp is not None


@responses.activate
def test_missing_revisions_field_is_retried(client):
    responses.get(API, json={"batchcomplete": True, "query": {"pages": [{"pageid": 7, "ns": 0, "title": "P"}]}})
    responses.get(API, json={"batchcomplete": True, "query": {"pages": [
        {"pageid": 7, "ns": 0, "title": "P", "revisions": []}]}})
    errors = []
    assert list(client.revision_batches(PageInfo(7, 0, "P", 1), on_retry=lambda e, d: errors.append(e))) == [[]]
    assert isinstance(errors[0], BadResponse)


@responses.activate
def test_continuation_sends_the_whole_continue_object_back(client):
    first, second = recorded("revisions_first_batch"), recorded("revisions_continued")
    responses.get(API, json=first["body"])
    last = json.loads(json.dumps(second["body"]))
    last.pop("continue")
    responses.get(API, json=last)
    batches = list(client.revision_batches(PageInfo(2, 0, "Anarchism", 15181)))
    assert [r.rev_id for r in batches[0]][:2] == [2, 3]
    sent = responses.calls[1].request.params
    assert sent["rvcontinue"] == "20020225154311|7" and sent["continue"] == "||"
    assert sent["rvdir"] == "newer" and sent["rvlimit"] == "max" and not sent["rvprop"].endswith("|content")
    rev = batches[1][0]
    assert rev.rev_id == 7 and rev.anon and rev.user_id == 0


@responses.activate
def test_revision_deleted_fields_become_hidden_flags(client):
    body = recorded("revdel_hidden_fields")["body"]
    responses.get(API, json=body)
    [batch] = list(client.revision_batches(PageInfo(10, 2, "User:Ryulong", 6624), content=True))
    rev = batch[0]
    assert rev.user is None and rev.user_hidden and rev.sha1_hidden and rev.text_hidden
    assert rev.content is None and rev.comment_hidden and rev.comment is None


@responses.activate
def test_missing_and_invalid_titles_fail_with_the_wikis_message(client):
    body = recorded("info_normalized_redirects_invalid")["body"]
    pages = {p["title"]: p for p in body["query"]["pages"]}
    invalid = next(p for p in pages.values() if p.get("invalid") and "[" in p["title"])
    responses.get(API, json={"query": {"pages": [invalid]}})
    responses.get(API, json={"query": {"pages": [{"ns": 0, "title": "NoSuchPage", "missing": True}]}})
    with pytest.raises(PageUnavailable, match="invalid characters"):
        client.resolve("Foo[bar]")
    with pytest.raises(PageUnavailable, match="does not exist"):
        client.resolve("NoSuchPage")


@responses.activate
def test_requests_to_one_host_are_spaced(client, clock):
    for _ in range(3):
        responses.get(API, json=ok_info())
    for _ in range(3):
        client.resolve("Page")
    assert clock.slept == pytest.approx([0.1, 0.1])


@responses.activate
def test_connection_errors_are_wrapped(client):
    responses.get(API, body=requests.ConnectionError("refused"))
    responses.get(API, json=ok_info())
    errors = []
    client.resolve("Page", on_retry=lambda e, d: errors.append(e))
    assert type(errors[0]).__name__ == "TransportError"


def opening_body(*, redirect=True) -> dict:
    """A recorded first batch of 'Anarchism' as prop=revisions|info answers it for a redirect's title."""
    body = json.loads(json.dumps(recorded("revisions_first_batch")["body"]))
    body["continue"]["continue"] = "||info"
    body["query"]["pages"][0].update(contentmodel="wikitext", lastrevid=15181, length=3406)
    body["query"]["normalized"] = [{"fromencoded": False, "from": "anarchy_now", "to": "Anarchy now"}]
    if redirect:
        body["query"]["redirects"] = [{"from": "Anarchy now", "to": "Anarchism"}]
    return body


@responses.activate
def test_the_first_history_request_resolves_the_title_then_the_history_goes_on_by_page_id(client):
    responses.get(API, json=opening_body())
    last = json.loads(json.dumps(recorded("revisions_continued")["body"]))
    last.pop("continue")
    responses.get(API, json=last)
    opening = client.open_history("anarchy_now")
    assert opening.page == PageInfo(2, 0, "Anarchism", 15181) and len(responses.calls) == 1
    first = responses.calls[0].request.params
    assert (first["titles"], first["redirects"], first["prop"]) == ("anarchy_now", "1", "revisions|info")
    assert (first["rvlimit"], first["rvdir"]) == ("max", "newer")
    assert "pageids" not in first and "rvstart" not in first
    batches = list(client.continue_history(opening))
    assert [r.rev_id for r in batches[0]][:2] == [2, 3] and batches[1][0].rev_id == 7
    assert all(r.title == "Anarchism" and r.page_id == 2 for b in batches for r in b)
    sent = responses.calls[1].request.params
    assert (sent["pageids"], sent["prop"]) == ("2", "revisions")
    assert "titles" not in sent and "redirects" not in sent
    assert (sent["rvcontinue"], sent["continue"]) == ("20020225154311|7", "||info")
    assert len(responses.calls) == 2


@responses.activate
def test_the_opening_resumes_from_start_with_content_and_ends_without_continue(client):
    body = opening_body(redirect=False)
    body.pop("continue")
    responses.get(API, json=body)
    start = datetime(2002, 2, 25, 15, 43, 11, tzinfo=timezone.utc)
    opening = client.open_history("Anarchism", page_id=2, start=start, content=False)
    sent = responses.calls[0].request.params
    assert sent["rvstart"] == "2002-02-25T15:43:11Z" and opening.start == start and opening.more is None
    assert list(client.continue_history(opening)) == [opening.batch] and len(responses.calls) == 1


@responses.activate
def test_an_opening_for_another_page_than_expected_reads_no_batch(client):
    body = opening_body(redirect=False)
    del body["query"]["pages"][0]["revisions"]      # the title's new page has nothing after the old start
    body.pop("continue")
    responses.get(API, json=body)
    opening = client.open_history("Anarchism", page_id=99, start=datetime(2030, 1, 1, tzinfo=timezone.utc))
    assert opening.page.page_id == 2 and opening.batch is None and opening.more is None


@responses.activate
def test_a_broken_opening_is_asked_again_the_same_way(client):
    body = opening_body()
    del body["query"]["pages"][0]["revisions"]
    body.pop("continue")
    responses.get(API, json=body)
    responses.get(API, json=opening_body())
    errors = []
    opening = client.open_history("anarchy_now", on_retry=lambda e, d: errors.append(e))
    assert isinstance(errors[0], BadResponse) and "'revisions' missing" in str(errors[0])
    assert len(opening.batch) == 5
    assert responses.calls[0].request.url == responses.calls[1].request.url


@responses.activate
def test_missing_invalid_and_special_titles_fail_the_opening_with_the_wikis_message(client):
    body = recorded("info_normalized_redirects_invalid")["body"]
    invalid = next(p for p in body["query"]["pages"] if p.get("invalid") and "[" in p["title"])
    for page in (invalid, {"ns": 0, "title": "NoSuchPage", "missing": True},
                 {"ns": -1, "title": "Special:Version", "special": True}):
        responses.get(API, json={"batchcomplete": True, "query": {"pages": [page]},
                                 "limits": {"revisions": 500}})
    for title, message in (("Foo[bar]", "invalid characters"), ("NoSuchPage", "does not exist"),
                           ("Special:Version", "not an article")):
        with pytest.raises(PageUnavailable, match=message):
            client.open_history(title)
    assert len(responses.calls) == 3


@responses.activate
def test_a_title_that_leads_to_another_wiki_fails_the_opening_once(client):
    """A redirect to an interwiki title (the real Chamorro Wikipedia has one, imported locally) answers with
    `interwiki` and no `pages`: the page is on another wiki, a failure to report, not an answer to fetch again."""
    responses.get(API, json={"batchcomplete": True, "query": {
        "redirects": [{"from": "BlackWidow Chamorro Wiki:Community Portal", "to": "wikipedia:Fanhaluman komunida",
                       "tointerwiki": "wikipedia"}],
        "interwiki": [{"title": "wikipedia:Fanhaluman komunida", "iw": "wikipedia"}]}})
    with pytest.raises(PageUnavailable, match="leads to another wiki: 'wikipedia:Fanhaluman komunida'"):
        client.open_history("BlackWidow Chamorro Wiki:Community Portal")
    assert len(responses.calls) == 1
