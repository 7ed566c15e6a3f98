"""Where a change feed reader stands, and whether the feed still covers what lies after it. Pure: no I/O.

recentchanges is ordered by (timestamp, rcid); several entries share a second, so a position is both: the
last entry read. `rccontinue` "<timestamp>|<rcid>" with rcdir=newer starts *at* that entry, so a read
from a position sees that entry first while the feed still holds it, and drops it.

The wiki drops entries older than $wgRCMaxAge (90 days by default; the API does not say), and a page's
deletion drops its edit entries. So an entry at or before the position's second that is still there
proves that nothing after the position was dropped for age. Without one, the span from the position to
the oldest entry left is a gap: per-page checks must cover it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

_MW_FORMAT = "%Y%m%d%H%M%S"


@dataclass(frozen=True, order=True)
class FeedPosition:
    """The last entry read (rcid 0: none read yet, the feed is read from `timestamp` on)."""
    timestamp: datetime         # timezone-aware UTC, whole seconds as the wiki stores them
    rcid: int

    @property
    def token(self) -> str:
        """The persisted form, also the `rccontinue` value that resumes here."""
        return f"{self.second}|{self.rcid}"

    @property
    def second(self) -> str:
        """The position's second as the API takes it (`rcstart`, `lestart`)."""
        return self.timestamp.astimezone(timezone.utc).strftime(_MW_FORMAT)

    @classmethod
    def parse(cls, token: str) -> FeedPosition:
        """The position a `token` names; ValueError for anything else."""
        when, _, rcid = token.partition("|")
        return cls(datetime.strptime(when, _MW_FORMAT).replace(tzinfo=timezone.utc), int(rcid))


@dataclass(frozen=True)
class Gap:
    """The feed no longer covers (start, end]: entries there may have been dropped. Reading on from
    `resume` continues with the oldest entry the feed holds (end is None when it holds none)."""
    start: datetime
    end: datetime | None
    resume: FeedPosition


def still_holds(position: FeedPosition, first: FeedPosition | None) -> bool:
    """Whether the first entry a read from `position` returned proves the feed covers what follows:
    it is the position's own entry, or another of the same second."""
    return first is not None and (first.rcid == position.rcid or first.timestamp == position.timestamp)


def gap(position: FeedPosition, first: FeedPosition | None, older: FeedPosition | None,
        now: datetime) -> Gap | None:
    """The gap after `position`, or None when the feed covers it. `first`: the first entry at or after the
    position, `older`: the newest entry at or before its second, `now`: the wiki's clock."""
    if still_holds(position, first) or older is not None:
        return None
    if first is None:       # an empty feed: nothing proves what it held; on from now
        return Gap(position.timestamp, now, FeedPosition(now, 0))
    return Gap(position.timestamp, first.timestamp, FeedPosition(first.timestamp, first.rcid - 1))
