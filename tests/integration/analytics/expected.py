"""The generator's expected histories as the answers the cookbook and the statistics should give:
computed here from tools.wikigen's output alone, never from what was harvested."""
from dataclasses import dataclass
from datetime import date, datetime


@dataclass(frozen=True)
class Edit:
    title: str
    ts: datetime            # aware UTC
    user: str
    anon: bool
    minor: bool
    comment: str
    size: int
    delta: int              # size minus the previous revision's size; a creation's delta is its size
    tags: tuple[str, ...]   # change tags, sorted: the generator tags its reverts (wikigen.REVERT_TAG)

    @property
    def month(self) -> int:
        return self.ts.year * 100 + self.ts.month

    @property
    def day(self) -> date:
        return self.ts.date()


def edits_by_title(wiki) -> dict[str, list[Edit]]:
    """Oldest first, for every article a harvest stores: redirects resolve to their target, so a
    redirect page's own revisions are never harvested."""
    out = {}
    for page in wiki.pages:
        if page.is_redirect:
            continue
        edits, previous = [], 0
        for r in page.revisions:
            ts = datetime.fromisoformat(r.timestamp.replace("Z", "+00:00"))
            edits.append(Edit(page.title, ts, r.user, r.anon, r.minor, r.comment, r.size, r.size - previous,
                              r.tags))
            previous = r.size
        out[page.title] = edits
    return out
