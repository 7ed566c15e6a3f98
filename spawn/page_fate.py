"""What became of a subscribed page the wiki no longer answers as before: moved, deleted or restored. Pure: no I/O.

A page's identity is its page id. A move keeps the id and changes the title (the move's null revision already
carries the new one); a deletion makes the id answer as missing; an undeletion brings the id back with its old
revisions, whose timestamps lie before the resume point, so the history is read again from its start.
"""
from dataclasses import replace
from datetime import datetime
from enum import StrEnum
from typing import Sequence

from shared.revisions.model import PageState, Revision
from spawn.mediawiki import PageInfo


class Fate(StrEnum):
    UNKNOWN = "unknown"      # the title was never resolved here: the wiki's "missing" message stands
    MOVED = "moved"          # the page id is there under another title
    DELETED = "deleted"      # the page id answers as missing


def missing_title(known_page_id: int | None, by_id: PageInfo | None) -> Fate:
    """A subscribed title the wiki answers as missing. `known_page_id`: the page the title named when it was
    last stored; `by_id`: what the wiki answers for that id (None: missing, or not asked)."""
    if known_page_id is None:
        return Fate.UNKNOWN
    return Fate.DELETED if by_id is None else Fate.MOVED


def undeleted_unseen(stored: PageState | None, resolved_page_id: int) -> bool:
    """A title resolved to a page whose stored row says deleted: the wiki undeleted it while no source
    watched, so its history is read again from the start."""
    return stored is not None and stored.deleted and stored.page_id == resolved_page_id


def retitled(page: PageInfo, batch: Sequence[Revision]) -> PageInfo | None:
    """The page under the title its newest fetched revision carries, when a move changed it; else None.
    Revisions of one answer carry the page's title at the time of the request, not at the revision's."""
    if not batch:
        return None
    newest = batch[-1]
    if (newest.ns, newest.title) == (page.ns, page.title):
        return None
    return replace(page, ns=newest.ns, title=newest.title, last_rev_id=max(page.last_rev_id, newest.rev_id))


def up_to(batch: Sequence[Revision], last: tuple[datetime, int]) -> list[Revision]:
    """The revisions of a batch of a re-read from the start that are at or before `last` (timestamp, rev id):
    the stored range, where an undeletion restores revisions the incremental harvest never asks for again."""
    return [r for r in batch if (r.timestamp, r.rev_id) <= last]
