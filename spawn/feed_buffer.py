"""A feed reader's changes between its reads and the hub's acknowledgements. Pure: no I/O.

The reader reads on from its own position and keeps every change it read until the hub acknowledges it: the
hub's next FeedDuty names the position up to which it has routed the changes (at least once: a report the hub
lost is reported again). So a change is dropped only once routed, a duplicate is harmless (the hub skips
changes at or before what it routed; a source nudged twice makes one more pass), and a restarted reader or
hub starts again from the last acknowledged position.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from shared.feed_wire import FeedChange, FeedGap, FeedReport
from spawn.feed_changes import changes_of, merged
from spawn.feed_position import FeedPosition

# Changes a reader keeps unacknowledged; it reads no further until the hub takes some
MAX_BUFFERED = 20_000
# Changes one report carries (about 150 bytes each)
MAX_REPORTED = 2_000


@dataclass(frozen=True)
class Buffer:
    base: FeedPosition | None       # the hub's acknowledged position, as received (None: none yet)
    position: FeedPosition | None   # where the next read starts (None: at the feed's newest entry)
    changes: tuple[FeedChange, ...] = ()
    covered_to: datetime | None = None      # the wiki's clock when the last read found nothing more
    gaps: tuple[tuple[FeedPosition, FeedGap], ...] = ()    # (where reading resumed, the gap)

    @property
    def full(self) -> bool:
        return len(self.changes) >= MAX_BUFFERED


def start(acked: FeedPosition | None) -> Buffer:
    return Buffer(base=acked, position=acked)


def acknowledge(buf: Buffer, acked: FeedPosition | None) -> Buffer:
    """The hub's duty names `acked`. Within what this reader read: the changes up to it are dropped. Before
    what it kept (the hub lost reports, or restarted) or past what it read (another reader went further):
    reading starts over from `acked`."""
    if acked == buf.base:
        return buf
    if acked is None or buf.position is None or (buf.base is not None and acked < buf.base) \
            or acked > buf.position:
        return start(acked)
    return replace(buf, base=acked, changes=tuple(c for c in buf.changes if FeedPosition.parse(c.at) > acked),
                   gaps=tuple((at, g) for at, g in buf.gaps if at > acked))


def after_read(buf: Buffer, events, position: FeedPosition, *, more: bool, now: datetime | None) -> Buffer:
    """A read's events added. `covered_to` is the wiki's clock when the read left nothing unread."""
    found = [c for e in events for c in changes_of(e)]
    changes = tuple(merged([*buf.changes, *found])) if found else buf.changes
    covered = now if not more and now is not None else position.timestamp
    return replace(buf, position=position, changes=changes, covered_to=covered)


def after_gap(buf: Buffer, gap: FeedGap, resume: FeedPosition) -> Buffer:
    """The feed no longer covers a span after the position: reading goes on from the oldest entry left."""
    return replace(buf, position=resume, gaps=(*buf.gaps, (resume, gap)))


def report(buf: Buffer, *, error: str | None = None, requests: int = 0) -> FeedReport:
    """What the hub routes. At most MAX_REPORTED changes: then the report ends at the last one carried,
    and its time is all it vouches for."""
    changes = buf.changes[:MAX_REPORTED]
    position, covered = buf.position, buf.covered_to
    if len(changes) < len(buf.changes):
        # never between changes of one place (suppression log entries of one second share theirs): the
        # position reported vouches for everything up to it, and the hub skips what comes at or before it
        cut = len(changes)
        while cut > 1 and buf.changes[cut - 1].at == buf.changes[cut].at:
            cut -= 1
        changes = buf.changes[:cut]
        position = FeedPosition.parse(changes[-1].at)
        covered = position.timestamp
    return FeedReport(since=_token(buf.base), position=_token(position), changes=changes,
                      covered_to=None if covered is None else covered.isoformat(),
                      gaps=tuple(g for at, g in buf.gaps if position is None or at <= position),
                      error=error, requests=requests)


def _token(position: FeedPosition | None) -> str | None:
    return None if position is None else position.token
