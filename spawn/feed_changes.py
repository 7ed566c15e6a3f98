"""What each change feed event asks of the sources of the pages it names. Pure: no I/O.

The hub routes a change by the page's title (its page key), so an event names every title whose sources
must act: a move names the old title (the sources that fetch the page by it) and the new one (a source
subscribed under the new title resolves to the moved page); a history merge names both pages.
"""
from __future__ import annotations

from shared.feed_wire import HIDE, HISTORY, REVISIONS, VISIBILITY, FeedChange, joined, stronger
from spawn.feed_events import (Event, HistoryMerged, Imported, NewRevision, PageDeleted, PageMoved, PageRestored,
                               VisibilityChanged)
from spawn.feed_position import FeedPosition


def changes_of(event: Event) -> list[FeedChange]:
    """The (title, kind) pairs an event stands for, in the order the titles appear in it.
    REVISIONS: the history read on from the resume point finds new revisions, the move's new title, or
    the page missing (a deletion). HISTORY: revisions appeared in the past (an undeletion, a merge, an
    import) or fields were hidden or shown again: the stored history is compared with the wiki's."""
    at = FeedPosition(event.timestamp, event.rcid).token
    titles: list[tuple[str, str]]
    if isinstance(event, PageMoved):
        titles = [(event.title, REVISIONS), (event.new_title, REVISIONS)]
    elif isinstance(event, NewRevision):
        # the revision's id: its page's node fetches it with other pages' (spawn.nudge_fetch)
        return [FeedChange(event.title, REVISIONS, at, event.page_id, (event.rev_id,) if event.rev_id > 0 else ())]
    elif isinstance(event, PageDeleted):
        titles = [(event.title, REVISIONS)]
    elif isinstance(event, HistoryMerged):
        titles = [(event.title, HISTORY), (event.dest_title, HISTORY)]
    elif isinstance(event, VisibilityChanged):
        # What the action newly hid leaves every copy on the log's word, with no request: the fields it left as
        # they were are not touched (one entry for several revisions states them only for the whole set). Only
        # a field shown again needs those revisions read again, to write it back.
        rev_ids = tuple(sorted(set(event.rev_ids)))
        hide = tuple((rev_id, tuple(sorted(event.newly_hidden))) for rev_id in rev_ids) if event.newly_hidden else ()
        if hide and not event.unhidden:
            return [FeedChange(event.title, HIDE, at, event.page_id, (), hide)]
        return [FeedChange(event.title, VISIBILITY, at, event.page_id, rev_ids, hide)]
    elif isinstance(event, (PageRestored, Imported)):
        titles = [(event.title, HISTORY)]
    else:           # a kind of event this version does not act on
        return []
    return [FeedChange(title, kind, at, event.page_id) for title, kind in titles]


def merged(changes: list[FeedChange]) -> list[FeedChange]:
    """One change per title, at its newest entry, of the kind that does what all of them ask (HISTORY over
    VISIBILITY over REVISIONS: each also reads on from the resume point), with the revision ids of every
    VISIBILITY among them, or of REVISIONS when each named its revision (one without, a move or a deletion,
    makes the source read on from its resume point instead), and every field any of them hid: a busy page
    edited fifty times between two reads costs its source one pass. Ordered by that newest entry."""
    by_title: dict[str, FeedChange] = {}
    for change in changes:
        seen = by_title.get(change.title)
        kind = stronger(change.kind, seen.kind if seen else None)
        if change.kind == HIDE:         # names no revision to read: what the others named stands
            revs = seen.rev_ids if seen else ()
        else:
            prior = seen if seen is not None and seen.kind != HIDE else None
            union = tuple(sorted({*change.rev_ids, *(prior.rev_ids if prior else ())}))
            named = bool(change.rev_ids) and (prior is None or bool(prior.rev_ids))
            revs = union if kind == VISIBILITY or (kind == REVISIONS and named) else ()
        hide = joined(seen.hide, change.hide) if seen else change.hide
        by_title[change.title] = FeedChange(change.title, kind, change.at, change.page_id, revs, hide)
    return sorted(by_title.values(), key=lambda c: FeedPosition.parse(c.at))
