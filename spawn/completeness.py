"""Whether a page's stored history equals the wiki's, and when to ask. Pure: no I/O.

Revisions can appear in the past (an undeletion, a history merge, an import with old timestamps), where the
harvest, which resumes after the newest stored revision, never looks. So once a page is caught up its source
reads the wiki's history without content (500 revision ids per request) up to the resume point and compares
the ids with the stored ones. Counts are not enough: MediaWiki 1.39's REST `history/counts/edits` caches a
page's count and adds only the edits newer than the cached revision, so it misses imported revisions with
old timestamps (measured on the writable test wiki: 2 after an import made the history 5).

The same listing shows what revision deletion hid since the revisions were stored (user, comment, and the
text through its sha1, which MediaWiki hides with it): visibility() says which stored fields to remove,
and which revisions the wiki shows again.
"""
from dataclasses import dataclass
from typing import Iterable

from shared.revisions.model import Revision


def check_at(*, caught_up_at: float | None, last_checked: float | None, every_s: float) -> float | None:
    """When a page's history is next compared with the wiki's: one longest revisit interval (`every_s`,
    BW_REVISIT_MAX_S) after it was caught up, then once per interval; None while it is not caught up. Not at
    once: a restarted spawn would list every page's whole history together, and a page just read from its start
    was read whole anyway. Not per edit: a long, busy page would cost a request per 500 revisions per revisit."""
    if caught_up_at is None:
        return None
    return (caught_up_at if last_checked is None else last_checked) + every_s


@dataclass(frozen=True)
class Comparison:
    missing: tuple[int, ...]    # on the wiki, not stored: written by the repair
    extra: tuple[int, ...]      # stored, no longer in the wiki's visible history (deleted or merged away)

    @property
    def equal(self) -> bool:
        return not self.missing and not self.extra

    @property
    def complete_after_repair(self) -> bool:
        """Stored revisions the wiki no longer shows are not ours to remove here: the page stays unproven."""
        return not self.extra


def compare(stored: Iterable[int], wiki: Iterable[int]) -> Comparison:
    """The stored revision ids against the wiki's up to the same resume point."""
    stored_set, wiki_set = set(stored), set(wiki)
    return Comparison(tuple(sorted(wiki_set - stored_set)), tuple(sorted(stored_set - wiki_set)))


@dataclass(frozen=True)
class Hide:
    """Fields of a stored revision the wiki now hides."""
    rev_id: int
    text: bool
    comment: bool
    user: bool

    @classmethod
    def of(cls, rev_id: int, names: Iterable[str]) -> "Hide":
        """From the wiki's field names (shared.feed_wire.HIDEABLE: content, comment, user)."""
        names = frozenset(names)
        return cls(rev_id, "content" in names, "comment" in names, "user" in names)


@dataclass(frozen=True)
class Visibility:
    hide: tuple[Hide, ...]      # remove these fields from the store
    show: tuple[int, ...]       # revisions with a field stored hidden that the wiki shows again: read again


def _hidden(r: Revision) -> tuple[bool, bool, bool]:
    # a listing without content says a hidden text only through its sha1, which is hidden with it
    return r.text_hidden or r.sha1_hidden, r.comment_hidden, r.user_hidden


def visibility(stored: Iterable[Revision], wiki: Iterable[Revision]) -> Visibility:
    """Stored revisions against the wiki's listing of the same ids (either may hold ids the other lacks)."""
    on_wiki = {r.rev_id: _hidden(r) for r in wiki}
    hide, show = [], []
    for r in stored:
        now = on_wiki.get(r.rev_id)
        if now is None:
            continue
        was = _hidden(r)
        newly = tuple(n and not w for n, w in zip(now, was))
        if any(newly):
            hide.append(Hide(r.rev_id, *newly))
        if any(w and not n for n, w in zip(now, was)):
            show.append(r.rev_id)
    return Visibility(tuple(sorted(hide, key=lambda h: h.rev_id)), tuple(sorted(show)))
