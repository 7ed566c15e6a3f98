"""blackwidow.store.feeds on SQLite: the `wiki_feeds` row is written when something in it changed, and a
report that changed nothing else moves `reported_at` once per report interval, not at every tick."""
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from blackwidow.feed_plan import WikiFeedState
from blackwidow.store import feeds as store

WIKI = "http://wiki.test/w/api.php"
EVERY_S = 3.0
T0 = datetime.fromtimestamp(2_000_000_001, timezone.utc)        # the start of a span of EVERY_S


def reported_at(maker) -> datetime | None:
    with maker.begin() as session:
        [feed] = store.list_feeds(session)
        return feed.reported_at


def test_reported_at_alone_is_written_once_per_interval_and_anything_else_at_once(hub_maker):
    state = WikiFeedState(acked="20260101000000|1", watermark=T0 - timedelta(seconds=5), reader="n1",
                          reported_at=T0)
    ticks = [state]

    def tick(**changed) -> None:
        before, after = ticks[-1], replace(ticks[-1], **changed)
        with hub_maker.begin() as session:
            store.save(session, {WIKI: after}, {WIKI: before}, every_s=EVERY_S)
        ticks.append(after)

    with hub_maker.begin() as session:
        store.save(session, {WIKI: state}, {}, every_s=EVERY_S)
    assert reported_at(hub_maker) == T0

    tick(reported_at=T0 + timedelta(seconds=1))
    tick(reported_at=T0 + timedelta(seconds=2.5))
    assert reported_at(hub_maker) == T0                                 # the same span: not written
    tick(reported_at=T0 + timedelta(seconds=3.5))
    assert reported_at(hub_maker) == T0 + timedelta(seconds=3.5)        # the next span
    tick(reported_at=T0 + timedelta(seconds=4), watermark=T0)
    assert reported_at(hub_maker) == T0 + timedelta(seconds=4)          # the watermark moved: written now
    tick(reported_at=T0 + timedelta(seconds=5), error="HTTP 503")
    with hub_maker.begin() as session:
        [feed] = store.list_feeds(session)
    assert (feed.error, feed.watermark, feed.reported_at) == ("HTTP 503", T0, T0 + timedelta(seconds=5))
    tick(reported_at=T0 + timedelta(seconds=5.5))
    assert reported_at(hub_maker) == T0 + timedelta(seconds=5)
