"""A census's listing (spawn.census) on its way to the store: the revision ids the wiki lists, per page, buffered by
shard and added to the store (RevisionStore.add_listing) at each flush, where whichever node proves a shard reads
them. The reader holds at most one listing step's ids (20 requests, 10,000 ids), whatever the wiki's size.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from shared.census_wire import shard_of
from shared.revisions.store import RevisionStore


class Listing:
    """Not thread-safe: one reader's thread adds and flushes."""

    def __init__(self, store: RevisionStore, wiki: str, key: str, shards: int):
        self.store, self.wiki, self.key, self.shards = store, wiki, key, shards
        self._buffers: list[dict[int, list[int]]] = [{} for _ in range(shards)]

    def add(self, pages: Mapping[int, Sequence[int]]) -> None:
        for page_id, ids in pages.items():
            self._buffers[shard_of(page_id, self.shards)].setdefault(page_id, []).extend(ids)

    def flush(self) -> None:
        """Everything added so far into the store. A flush that fails keeps its ids for the next one."""
        for shard, pages in enumerate(self._buffers):
            if pages:
                self.store.add_listing(self.wiki, self.key, shard, pages)
                self._buffers[shard] = {}

    def drop(self) -> None:
        self._buffers = [{} for _ in range(self.shards)]
        self.store.drop_listing(self.wiki, self.key, self.shards)
