"""SQL of the change feeds the scheduler follows (`wiki_feeds`, blackwidow.feed_plan). Functions take the
session first and never commit."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.feed_plan import WikiFeedState
from blackwidow.models import Subscription, WikiFeed
from blackwidow.store.pagination import as_utc

MAX_ERROR = 500


def load(session: Session) -> dict[str, WikiFeedState]:
    """What a scheduler starting to lead knows of each feed: its acknowledged position and watermark."""
    # the last report's time and error too: a scheduler that restarts keeps following a feed that answered
    # just now, rather than have every page of the wiki checked one by one
    return {row.wiki: WikiFeedState(acked=row.position, watermark=_aware(row.watermark), read_to=row.position,
                                    covered_to=_aware(row.watermark), reader=row.reader,
                                    reported_at=_aware(row.reported_at), error=row.error, changes=row.changes,
                                    gaps=row.gaps, last_gap=row.last_gap, requests=row.requests)
            for row in session.scalars(sa.select(WikiFeed))}


def save(session: Session, feeds: Mapping[str, WikiFeedState], before: Mapping[str, WikiFeedState], *,
         every_s: float) -> None:
    """Write the feeds whose persisted fields changed since `before` (the feeds as the previous tick left them).
    A report that changed nothing else moves `reported_at` (and the reader's `requests`) once every `every_s`
    (the first tick in each span of it): the row is then at most `every_s` and a tick behind the last report,
    which the admin API shows and a scheduler that takes over reads to decide whether the feed is still
    followed."""
    for wiki, state in feeds.items():
        old = before.get(wiki)
        if old is not None and _persisted(old) == _persisted(state) \
                and not _new_span(old.reported_at, state.reported_at, every_s):
            continue
        row = session.get(WikiFeed, wiki)
        if row is None:
            row = WikiFeed(wiki=wiki)
            session.add(row)
        row.position, row.watermark, row.reader = state.acked, state.watermark, state.reader
        row.reported_at, row.requests = state.reported_at, state.requests
        row.error = None if state.error is None else state.error[:MAX_ERROR]
        row.changes, row.gaps, row.last_gap = state.changes, state.gaps, state.last_gap


def _persisted(state: WikiFeedState) -> tuple:
    """What the row holds besides the reader's progress (`reported_at`, `requests`): any change is written at
    once."""
    return state.acked, state.watermark, state.reader, state.error, state.changes, state.gaps, state.last_gap


def _new_span(old: datetime | None, new: datetime | None, every_s: float) -> bool:
    if old is None or new is None or every_s <= 0:
        return old != new
    return new.timestamp() // every_s != old.timestamp() // every_s


@dataclass(frozen=True)
class FeedView:
    """A feed as the API shows it."""
    wiki: str
    position: str | None
    watermark: datetime | None
    reader: str | None
    reported_at: datetime | None
    error: str | None
    changes: int
    gaps: int
    last_gap: str | None
    subscriptions: int
    requests: int = 0           # spent by the reader since it took the feed, as of reported_at


def list_feeds(session: Session) -> list[FeedView]:
    counts = dict(session.execute(sa.select(Subscription.wiki, sa.func.count())
                                  .where(Subscription.enabled.is_(True)).group_by(Subscription.wiki)).all())
    return [FeedView(r.wiki, r.position, _aware(r.watermark), r.reader, _aware(r.reported_at), r.error, r.changes,
                     r.gaps, r.last_gap, int(counts.get(r.wiki, 0)), r.requests)
            for r in session.scalars(sa.select(WikiFeed).order_by(WikiFeed.wiki))]


def watermarks(session: Session, wikis: set[str] | None = None) -> dict[str, datetime | None]:
    """{wiki: the watermark of its feed}, for the API's subscription views."""
    query = sa.select(WikiFeed.wiki, WikiFeed.watermark)
    if wikis is not None:
        query = query.where(WikiFeed.wiki.in_(sorted(wikis)))
    return {wiki: _aware(mark) for wiki, mark in session.execute(query)}


def _aware(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)
