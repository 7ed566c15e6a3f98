"""A census's listing (spawn.census): the revision ids the wiki lists, per page, kept by shard until each shard is
compared. In memory, or spilled to a file per shard in a directory of the census's own, so that the reading node
holds one shard's listing at a time, not the wiki's: about 200 bytes a page and 8 a revision id in memory, against
16 bytes a revision on disk. With spilling, `BW_CENSUS_SHARDS` is the knob of a census's memory.
"""
from __future__ import annotations

import shutil
import tempfile
from array import array
from pathlib import Path
from typing import Mapping, Sequence

from shared.census_wire import shard_of

FLUSH_PAIRS = 1 << 16       # (page, revision) pairs buffered across the shards before they go to their files


class Listing:
    """{page id: revision ids} by shard. `directory`: where a spilled listing makes its own directory (removed by
    close()); None: in memory. Not thread-safe: one reader's thread adds and reads."""

    def __init__(self, shards: int, directory: Path | None = None):
        self.shards = shards
        self._memory: list[dict[int, array]] | None = None
        self._dir: Path | None = None
        self._buffers: list[array] = []
        self._buffered = 0
        if directory is None:
            self._memory = [{} for _ in range(shards)]
        else:
            directory.mkdir(parents=True, exist_ok=True)
            self._dir = Path(tempfile.mkdtemp(prefix="census-", dir=directory))
            self._buffers = [array("q") for _ in range(shards)]

    def add(self, pages: Mapping[int, Sequence[int]]) -> None:
        for page_id, ids in pages.items():
            shard = shard_of(page_id, self.shards)
            if self._memory is not None:
                self._memory[shard].setdefault(page_id, array("q")).extend(ids)
                continue
            pairs = self._buffers[shard]
            for rev_id in ids:
                pairs.append(page_id)
                pairs.append(rev_id)
            self._buffered += len(ids)
        if self._buffered >= FLUSH_PAIRS:
            self._flush()

    def shard(self, shard: int) -> dict[int, array]:
        """The listing of one shard's pages (read again from its file each time when spilled)."""
        if self._memory is not None:
            return self._memory[shard]
        self._flush()
        pairs = array("q")
        path = self._path(shard)
        if path.exists():
            with open(path, "rb") as f:          # straight into the array: no copy of the file's bytes
                pairs.fromfile(f, path.stat().st_size // pairs.itemsize)
        out: dict[int, array] = {}
        for i in range(0, len(pairs), 2):
            out.setdefault(pairs[i], array("q")).append(pairs[i + 1])
        return out

    def close(self) -> None:
        self._memory, self._buffers = None, []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    @property
    def directory(self) -> Path | None:
        return self._dir

    def _flush(self) -> None:
        if self._dir is None:
            return
        for shard, pairs in enumerate(self._buffers):
            if pairs:
                with open(self._path(shard), "ab") as f:
                    pairs.tofile(f)
                self._buffers[shard] = array("q")
        self._buffered = 0

    def _path(self, shard: int) -> Path:
        assert self._dir is not None
        return self._dir / f"shard-{shard}.bin"


def clear(directory: Path) -> None:
    """Remove what censuses cut short by a crash left in `directory` (a node starting, before any census runs)."""
    for leftover in directory.glob("census-*"):
        shutil.rmtree(leftover, ignore_errors=True)
