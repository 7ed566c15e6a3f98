"""Where the suppression log's entries go in a change feed read. Pure: no I/O.

recentchanges never shows a suppression (`suppress/revision`, `suppress/delete`), not even to a reader
allowed to see it. `list=logevents` with `letype=suppress` does, to an identity holding the
`suppressionlog` right (anyone else gets an empty list), in the same request as the feed's read. Its
entries have no rcid, so each is given a place in the feed's order:

* at its own second (`rcid` 0, before that second's entries), or, when it shares the second of the
  read's starting entry, right after that entry (`rcid + 1`): always after the position the hub has
  routed up to, so the hub routes it, and never after an entry not yet read;
* no later than where the read ends: an entry beyond the last feed entry read waits for a read that
  gets there, unless the read left nothing unread at the wiki's clock, in which case the read's
  position moves on to the entry's place (the feed holds nothing between them);
* once: the log is read again from the starting position's second at every read, so the reader keeps
  the ids it placed (dropped with the seconds it leaves behind, and all of them when it reads from an
  earlier position again, where what it placed may not have reached the hub).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from spawn.feed_events import Event
from spawn.feed_position import FeedPosition


@dataclass(frozen=True)
class Logged:
    """One suppression log entry: its log id, its time, and what it means for a page (None: nothing,
    a block or a hidden log entry)."""
    log_id: int
    timestamp: datetime
    event: Event | None


@dataclass(frozen=True)
class Placed:
    events: tuple[Event, ...]           # the entries' events, carrying their places as (timestamp, rcid)
    position: FeedPosition              # where the read ends now
    seen: dict[int, datetime]           # log ids placed (or meaning nothing) still at or after that second


def place(entries: list[Logged], since: FeedPosition, end: FeedPosition, *, complete: bool,
          seen: dict[int, datetime]) -> Placed:
    """The events of `entries` (read from `since`'s second on) not placed before, each at its place in
    the feed; `end`: the last feed entry the read reached; `complete`: nothing was left unread."""
    after_start = FeedPosition(since.timestamp, since.rcid + 1)
    kept = {log_id: at for log_id, at in seen.items() if at >= since.timestamp}
    events: list[Event] = []
    position = end
    for entry in sorted(entries, key=lambda e: (e.timestamp, e.log_id)):
        if entry.log_id in kept or entry.timestamp < since.timestamp:
            continue
        at = max(FeedPosition(entry.timestamp, 0), after_start)
        if at > end and not complete:
            continue                    # beyond what this read reached: a later read places it
        kept[entry.log_id] = entry.timestamp
        if entry.event is not None:
            events.append(replace(entry.event, timestamp=at.timestamp, rcid=at.rcid))
        position = max(position, at)
    return Placed(tuple(events), position, {k: t for k, t in kept.items() if t >= position.timestamp})
