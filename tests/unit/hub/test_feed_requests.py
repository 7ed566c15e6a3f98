"""The requests a feed reader spends (FeedReport.requests): counted per wiki in bw_hub_feed_requests_total
(blackwidow.feed_tick), kept as the current reader's count (a new reader starts at 0) and shown by
GET /v1/feeds."""
from datetime import datetime, timezone

from blackwidow import feed_tick
from blackwidow.decide import Polled
from blackwidow.feed_plan import WikiFeedState
from blackwidow.metrics import SchedulerMetrics
from blackwidow.store import feeds as feeds_store
from blackwidow.store.coordination import Snapshot, SubscriptionView
from shared.feed_wire import FeedDuty, FeedReport
from shared.hashing import source_uuid, wiki_key
from shared.wire import StatusReport, SubscriptionSpec
from tests.fixtures.hub import hub_config

WIKI = "http://wiki.test/w/api.php"
AT = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
EMPTY = Snapshot({}, {}, {})


def test_spent_is_the_difference_or_everything_after_a_restart():
    assert [feed_tick.spent(5, 8), feed_tick.spent(5, 5), feed_tick.spent(0, 3), feed_tick.spent(9, 2)] == \
        [3, 0, 3, 2]


def test_each_report_adds_what_the_reader_spent_since_its_last():
    metrics = SchedulerMetrics()
    memory = feed_tick.FeedMemory(feeds={WIKI: WikiFeedState(reader="n1")})
    sent = feed_tick.FeedRound(duties={"n1": {WIKI: FeedDuty(None, 3.0)}})

    def tick(requests: int) -> float | None:
        report = FeedReport(since=None, position="20261124120000|1", requests=requests)
        polled = Polled({"n1": StatusReport(node_id="n1", boot_id="b", attached=True, feeds={WIKI: report})})
        memory.feeds = feed_tick.read_reports(memory, sent, polled, EMPTY, frozenset({"n1"}), AT, metrics, None)
        return metrics.registry.get_sample_value("bw_hub_feed_requests_total", {"wiki": wiki_key(WIKI)})

    assert tick(4) == 4
    assert tick(4) == 4             # the same count again (a report not acknowledged yet): nothing new
    assert tick(7) == 7
    assert tick(2) == 9             # the reader started again from 0 and spent 2
    assert memory.feeds[WIKI].requests == 2


def test_a_new_reader_starts_at_zero():
    spec = SubscriptionSpec(id="a", source_uuid=str(source_uuid(WIKI, "Apple")), tenant_id="t", wiki=WIKI,
                            title="Apple")
    snap = Snapshot({}, {"a": SubscriptionView("a", spec, True, "running", "n2", 0, None, None, None)}, {})
    config = hub_config("sqlite://")
    memory = feed_tick.FeedMemory(feeds={WIKI: WikiFeedState(acked="p", reader="n1", requests=40)})

    feed_tick.plan_round(memory, snap, 1, {}, frozenset({"n1", "n2"}), config, AT)
    assert (memory.feeds[WIKI].reader, memory.feeds[WIKI].requests) == ("n1", 40)     # the reader stays
    feed_tick.plan_round(memory, snap, 1, {}, frozenset({"n2"}), config, AT)            # n1 is gone
    assert (memory.feeds[WIKI].reader, memory.feeds[WIKI].requests) == ("n2", 0)


def test_get_feeds_shows_the_requests_the_reader_spent(api, hub_maker):
    state = WikiFeedState(acked="p", watermark=AT, reader="n1", reported_at=AT, requests=12)
    with hub_maker.begin() as session:
        feeds_store.save(session, {WIKI: state}, {}, every_s=3.0)
    [feed] = api.simulate_get("/v1/feeds").json["items"]
    assert (feed["reader"], feed["requests"]) == ("n1", 12)
    with hub_maker.begin() as session:
        assert feeds_store.load(session)[WIKI].requests == 12          # a scheduler taking over counts on from it
