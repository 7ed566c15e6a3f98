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
