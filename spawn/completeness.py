"""Whether a page's stored history equals the wiki's, and when to ask. Pure: no I/O.

Revisions can appear in the past (an undeletion, a history merge, an import with old timestamps), where the
harvest, which resumes after the newest stored revision, never looks. So once a page is caught up its source
reads the wiki's history without content (500 revision ids per request) up to the resume point and compares
the ids with the stored ones. Counts are not enough: MediaWiki 1.39's REST `history/counts/edits` caches a
page's count and adds only the edits newer than the cached revision, so it misses imported revisions with
old timestamps (measured on the writable test wiki: 2 after an import made the history 5).
"""
from dataclasses import dataclass
from typing import Iterable


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
