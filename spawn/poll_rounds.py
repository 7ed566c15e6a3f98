"""Paged polls, pure: which ids the hub assigns to this node, known only once a round is complete.

A hub whose list for a node does not fit one bounded poll sends it in pages of one round
(shared.wire.PollPage). The spawn may drop a subscription as unassigned only from a complete view:
every page of one round. Pages may arrive twice (a retried poll) or not at all (a failed one): a
repeated page changes nothing, and a round with a page missing never completes, so it drops nothing.
A new round (a new tick, a restarted hub) starts over. A poll without a page names the whole list.
"""
from dataclasses import dataclass, field
from typing import Mapping

from shared.wire import PollPage


@dataclass(frozen=True)
class Round:
    id: str | None = None
    pages: int = 0
    received: Mapping[int, tuple[str, ...]] = field(default_factory=dict)    # page -> its ids


def receive(current: Round, page: PollPage | None, ids: tuple[str, ...]) -> tuple[Round, tuple[str, ...] | None]:
    """(the round after this poll, the complete list of assigned ids when this poll completed it, else None)."""
    if page is None:
        return Round(), ids
    if (page.round, page.pages) != (current.id, current.pages):
        current = Round(page.round, page.pages)
    after = Round(current.id, current.pages, {**current.received, page.page: ids})    # copies pages, not ids
    if len(after.received) == after.pages:
        return after, tuple(sorted({i for page_ids in after.received.values() for i in page_ids}))
    return after, None
