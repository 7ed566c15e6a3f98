"""What a source knows of its page's stored history without reading it.

A source used to read a page's whole stored history whenever it started: on every node a subscription
arrived at, after every restart and detach. Its subscribers only need the count of stored revisions up
to the resume point, the newest ids (the revision a subscriber was last credited with) and the newest
timestamps (the revisit rate). The store keeps the count beside the resume point (`RevisionStore.page`,
written together), so a source starts from one read of that row and one bounded read of the newest
revisions. An older id is read only when a subscriber capped below the stored count needs it.
"""
from array import array
from collections import deque
from typing import Callable, Iterable, Sequence

# newest (rev id, timestamp) pairs kept in memory: enough for the revisit rate and for the ids subscribers
# are credited with while they follow the source
RECENT_MAX = 1000


class StoredLog:
    """The page's stored revision ids up to the resume point, oldest first, as Subscriber.credit reads them
    (len() and [index]): the newest RECENT_MAX are held. An older one is None (unknown yet) and sets
    `wants_older`: the source's own thread then calls load_older() (a store read, never under a lock the
    registry or a poll waits on), which asks `older(newest)` for every stored id up to `newest` (rev id,
    timestamp), oldest first, and credits its subscribers again."""

    def __init__(self, count: int, recent: Iterable[tuple[int, float]],
                 older: Callable[[tuple[int, float]], Sequence[int]]):
        self._recent: deque[tuple[int, float]] = deque(recent, maxlen=RECENT_MAX)   # oldest first
        self._count = max(count, len(self._recent))
        self._older = older
        self._all: array | None = None      # every id, once a capped subscriber needed an older one
        self.wants_older = False

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> int | None:
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        back = self._count - 1 - index
        if back < len(self._recent):
            return self._recent[-1 - back][0]
        if self._all is None:
            self.wants_older = True
            return None
        if back >= len(self._all):
            raise IndexError(index)
        return self._all[len(self._all) - 1 - back]

    def load_older(self) -> None:
        """Read every stored id once (a capped subscriber is credited again with every lease)."""
        if self._all is None and self._recent:
            self._all = array("q", self._older(self._recent[-1]))
        self.wants_older = False

    @property
    def newest(self) -> int | None:
        return self._recent[-1][0] if self._recent else None

    def newest_timestamps(self, n: int) -> list[float]:
        """Up to `n` of the newest stored revisions' timestamps, newest first."""
        return [ts for _, ts in list(self._recent)[::-1][:n]]

    def extend(self, stored: Iterable[tuple[int, float]]) -> None:
        """Revisions this source stored after the others, oldest first."""
        for rev_id, ts in stored:
            self._recent.append((rev_id, ts))
            self._count += 1
            if self._all is not None:
                self._all.append(rev_id)
