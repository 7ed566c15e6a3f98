"""Reads one wiki's change feed (`list=recentchanges`) from a persisted position, oldest first: the thin
I/O shell around spawn.feed_position (where it stands, gaps), spawn.feed_events (what each entry means) and
spawn.suppression_log (where the suppression log's entries, read in the same requests, go).

Every request goes through the MediaWikiClient the spawn already uses for that wiki: its session (the
deployment's User-Agent, checked addresses), maxlag, retries, and the identity budget when the client
has one (`demand` says in which lane it waits: freshness by default).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial

from spawn.feed_events import Event, from_logevent, parse
from spawn.feed_position import FeedPosition, Gap, gap, still_holds
from spawn.mediawiki import BadResponse, MediaWikiClient, listed
from spawn.suppression_log import Logged, place
from spawn.upstream_budget import FRESH, Demand

logger = logging.getLogger(__name__)

RCPROP = "ids|title|timestamp|loginfo"
RCTYPE = "edit|new|log"             # no categorisation and no external entries: they change no history
LEPROP = "ids|title|type|timestamp|details"
DEFAULT_MAX_BATCHES = 20


@dataclass(frozen=True)
class FeedRead:
    """What one read found after its starting position: the events in feed order and the position after
    the last entry read (`more`: the read stopped at max_batches with entries left). `gap` is set, and
    nothing was read, when the feed no longer covers the span after the starting position."""
    events: tuple[Event, ...]
    position: FeedPosition
    more: bool = False
    gap: Gap | None = None
    entries: int = 0        # entries read, events or not
    now: datetime | None = None     # the wiki's clock at the last request


@dataclass(frozen=True)
class _Batch:
    entries: list[tuple[FeedPosition, Event | None]]
    more: dict | None
    now: datetime
    logged: list[Logged] = field(default_factory=list)     # the suppression log's entries


class ChangeFeed:
    """One wiki's feed, read with `client` (the spawn's MediaWikiClient for that wiki)."""

    def __init__(self, client: MediaWikiClient, *, limit: int | str = "max",
                 max_batches: int = DEFAULT_MAX_BATCHES, demand: Demand = Demand(FRESH)):
        self.client = client
        self.limit = str(limit)         # "max": 500, or 5,000 for an identity with apihighlimits
        self.max_batches = max_batches
        self.demand = demand
        self.requests = 0               # requests answered, for the reader's report
        self._suppressions: dict[int, datetime] = {}    # suppression log entries placed (spawn.suppression_log)
        self._read_to: FeedPosition | None = None

    def head(self, **kw) -> FeedPosition:
        """The position of the newest entry: reading from it yields what happens from now on."""
        return self.head_read(**kw).position

    def head_read(self, **kw) -> FeedRead:
        """head() as a read that found nothing, with the wiki's clock."""
        batch = self._batch({"rcdir": "older", "rclimit": "1"}, **kw)
        position = batch.entries[0][0] if batch.entries else FeedPosition(batch.now, 0)
        return FeedRead((), position, now=batch.now)

    def read(self, since: FeedPosition, **kw) -> FeedRead:
        """The events after `since`, in at most max_batches requests of `limit` entries, plus one request
        when the first answer does not prove the feed still covers `since`. The same requests read the
        suppression log from `since`'s second (empty unless the identity may read it). Raises MediaWikiError
        (an entry that does not parse is a BadResponse)."""
        if self._read_to is None or since < self._read_to:
            self._suppressions = {}     # an earlier start: what was placed may never have reached the hub
        params: dict = {"rcdir": "newer", "rclimit": self.limit, "rccontinue": since.token,
                        "list": "recentchanges|logevents", "letype": "suppress", "leprop": LEPROP,
                        "ledir": "newer", "lelimit": self.limit, "lestart": since.second}
        batch = self._batch(params, **kw)
        first = batch.entries[0][0] if batch.entries else None
        older = None if still_holds(since, first) else self._older(since, **kw)
        missing = gap(since, first, older, batch.now)
        if missing is not None:
            logger.warning("change_feed.gap", extra={"host": self.client.host, "start": missing.start.isoformat(),
                                                     "end": missing.end and missing.end.isoformat()})
            return FeedRead((), since, gap=missing, now=batch.now)
        events: list[Event] = []
        logged: list[Logged] = []
        position, entries, batches = since, 0, 1
        while True:
            for at, event in batch.entries:
                if at <= since:         # the starting position's own entry
                    continue
                if event is not None:
                    events.append(event)
                position, entries = at, entries + 1
            logged.extend(batch.logged)
            if batch.more is None or batches >= self.max_batches:
                placed = place(logged, since, position, complete=batch.more is None, seen=self._suppressions)
                self._suppressions, self._read_to = placed.seen, placed.position
                if placed.events:       # one order, the feed's: a page's changes merge at their newest place
                    events = sorted([*events, *placed.events], key=lambda e: (e.timestamp, e.rcid))
                return FeedRead(tuple(events), placed.position, more=batch.more is not None,
                                entries=entries, now=batch.now)
            batch = self._batch({**params, **batch.more}, continued=True, **kw)
            batches += 1

    def _older(self, since: FeedPosition, **kw) -> FeedPosition | None:
        """The newest entry at or before the position's second, if the feed still holds one."""
        batch = self._batch({"rcdir": "older", "rclimit": "1", "rcstart": since.second}, **kw)
        return batch.entries[0][0] if batch.entries else None

    def _batch(self, params: dict, *, continued: bool = False, **kw) -> _Batch:
        request = {"list": "recentchanges", "rcprop": RCPROP, "rctype": RCTYPE, "curtimestamp": "1", **params}
        batch = self.client.query(request, parse=partial(_parse_batch, continued=continued),
                                  **{"demand": self.demand, **kw})
        self.requests += 1
        return batch


def _parse_batch(body: dict, continued: bool = False) -> _Batch:
    """The answer's entries with their events, validated whole: a bad answer is fetched again, never read
    in part. A `continued` answer may leave out a list that was complete before (MediaWiki's `continue`
    names it)."""
    query = body.get("query")
    items: list
    if continued and isinstance(query, dict) and "recentchanges" not in query:
        items = []
        more = body.get("continue")
        if more is not None and not isinstance(more, dict):
            raise BadResponse("'continue' is not an object")
    else:
        items, more = listed(body, "recentchanges")
    log = query.get("logevents", []) if isinstance(query, dict) else []
    try:
        now = _when(body.get("curtimestamp"))
        entries = [(FeedPosition(_when(item.get("timestamp")), int(item["rcid"])), parse(item)) for item in items]
        if not isinstance(log, list):
            raise TypeError("'query.logevents' is not a list")
        logged = [Logged(int(entry["logid"]), _when(entry.get("timestamp")), parse(from_logevent(entry)))
                  for entry in log]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:     # MalformedItem is a ValueError
        raise BadResponse(f"malformed recentchanges answer: {exc!r}") from None
    return _Batch(entries, more, now, logged)


def _when(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"not a timestamp: {value!r}")
    return datetime.fromisoformat(value).astimezone(timezone.utc)
