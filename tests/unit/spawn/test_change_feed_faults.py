"""Fault paths of the change feed reader with `responses`: an answer that cannot be read whole is fetched
again and never read in part. Entries come from recentchanges_writable_wiki.json."""
import json
import pathlib

import pytest
import requests
import responses

from spawn.change_feed import ChangeFeed
from spawn.feed_position import FeedPosition
from spawn.host_limiter import Backoff, HostLimiter
from spawn.mediawiki import BadResponse, MediaWikiClient
from tests.unit.spawn.fakes import FakeClock

API = "http://wiki.test/w/api.php"
ITEMS = json.loads((pathlib.Path(__file__).parent / "recentchanges_writable_wiki.json").read_text())["recentchanges"]
SINCE = FeedPosition.parse("20261124070816|73")     # the "create" entry


def answer(*items: dict, **extra) -> dict:
    return {"batchcomplete": True, "curtimestamp": "2026-11-24T07:09:00Z", "query": {"recentchanges": list(items)},
            **extra}


@pytest.fixture
def feed():
    clock = FakeClock()
    client = MediaWikiClient(requests.Session(), API, limiter=HostLimiter(0.0, clock=clock, sleep=clock.sleep),
                             backoff=Backoff(base_s=1.0, rand=lambda: 1.0), max_attempts=3)
    return ChangeFeed(client)


@pytest.mark.parametrize("broken", [
    answer(ITEMS["create"], {**ITEMS["edit"], "rcid": None}),
    answer(ITEMS["create"], {**ITEMS["move with redirect"], "logparams": {"target_ns": 0}}),
    {k: v for k, v in answer(ITEMS["create"], ITEMS["edit"]).items() if k != "curtimestamp"},
    answer(ITEMS["create"], ITEMS["edit"], **{"continue": "20261124070817|75"}),
], ids=["entry without rcid", "move without its target", "no curtimestamp", "continue not an object"])
@responses.activate
def test_an_answer_that_cannot_be_read_whole_is_fetched_again(feed, broken):
    responses.get(API, json=broken)
    responses.get(API, json=answer(ITEMS["create"], ITEMS["edit"]))
    read = feed.read(SINCE)
    assert [e.rcid for e in read.events] == [74] and read.position == FeedPosition.parse("20261124070816|74")
    assert len(responses.calls) == 2


@responses.activate
def test_attempts_at_a_broken_answer_are_bounded_and_the_position_stays(feed):
    for _ in range(3):
        responses.get(API, json=answer(ITEMS["create"], {**ITEMS["edit"], "timestamp": "yesterday"}))
    with pytest.raises(BadResponse, match="malformed recentchanges answer"):
        feed.read(SINCE)
    assert len(responses.calls) == 3


SUPPRESSED = json.loads((pathlib.Path(__file__).parent / "recentchanges_writable_wiki.json").read_text())[
    "logevents"]["suppress user"]          # 2026-11-24T07:08:18Z, after SINCE's second


@responses.activate
def test_the_suppression_log_is_read_in_the_same_request_and_placed_once(feed):
    responses.get(API, json=answer(ITEMS["create"], ITEMS["edit"], query={
        "recentchanges": [ITEMS["create"], ITEMS["edit"]], "logevents": [SUPPRESSED]}))
    read = feed.read(SINCE)
    assert len(responses.calls) == 1
    sent = responses.calls[0].request.params
    assert sent["list"] == "recentchanges|logevents" and sent["letype"] == "suppress"
    assert sent["lestart"] == "20261124070816" and sent["ledir"] == "newer"
    (edit, hidden) = read.events
    assert edit.rcid == 74 and hidden.suppressed and hidden.rev_ids == (217,) and hidden.newly_hidden == {"user"}
    # past the last entry read and nothing left unread: the read ends at the entry's place
    assert FeedPosition(hidden.timestamp, hidden.rcid) == FeedPosition.parse("20261124070818|0") == read.position
    # read again from there: the same entry comes back from the log and is not placed twice
    responses.get(API, json=answer(query={"recentchanges": [], "logevents": [SUPPRESSED]}))
    responses.get(API, json=answer(ITEMS["create"]))        # the newest entry at or before the position's second
    again = feed.read(read.position)
    assert again.events == () and again.gap is None


@responses.activate
def test_a_continued_answer_without_the_list_that_was_complete_is_read(feed):
    # MediaWiki leaves a finished module out of the continued answer, and says so in `continue`
    responses.get(API, json=answer(query={"recentchanges": [ITEMS["create"]], "logevents": []},
                                   **{"continue": {"lecontinue": "20261124070818|86", "continue": "-||recentchanges"}}))
    responses.get(API, json={"batchcomplete": True, "curtimestamp": "2026-11-24T07:09:00Z",
                             "query": {"logevents": [SUPPRESSED]}})
    read = feed.read(SINCE)
    assert [e.rev_ids for e in read.events] == [(217,)] and len(responses.calls) == 2
    again = responses.calls[1].request.params
    assert again["lecontinue"] == "20261124070818|86" and again["continue"] == "-||recentchanges"


@responses.activate
def test_a_first_answer_without_the_feed_is_fetched_again(feed):
    responses.get(API, json={"batchcomplete": True, "curtimestamp": "2026-11-24T07:09:00Z",
                             "query": {"logevents": []}})
    responses.get(API, json=answer(ITEMS["create"], ITEMS["edit"]))
    assert [e.rcid for e in feed.read(SINCE).events] == [74] and len(responses.calls) == 2


@responses.activate
def test_a_suppression_goes_between_the_entries_around_it(feed):
    """The read's events in the feed's order: a page's changes merge at their newest place, so a suppression
    listed after a later edit must not come last."""
    later = {**ITEMS["protect"], "timestamp": "2026-11-24T07:08:19Z"}
    responses.get(API, json=answer(query={"recentchanges": [ITEMS["create"], ITEMS["edit"], later],
                                          "logevents": [SUPPRESSED]}))
    read = feed.read(SINCE)
    assert [(e.timestamp.second, e.rcid) for e in read.events] == [(16, 74), (18, 0), (19, 90)]
    assert read.position == FeedPosition.parse("20261124070819|90")
