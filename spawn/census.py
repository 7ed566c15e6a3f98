"""A set's census (docs/dumps.md, "The census"): the proof, page-id shard by shard, that the stored history of a
wiki (or of its namespaces) equals the wiki's, up to a cut.

The files of a dump can be incomplete in ways no file shows: a file left out of the set, a dump run that missed
pages, a page whose history was merged or imported after the dump began. The catch-up's `caught_up_to` proves the
span after the dump's date read; the census proves the whole. It lists every revision id the wiki holds up to the
cut (`list=allrevisions` without content: 500 ids a request, the cheapest listing there is, through the identity's
budget in the backfill lane), then shard by shard compares each listed page's ids with the stored ones up to the
cut, writes what is missing (`prop=revisions&revids=`, 50 a request) and counts what is stored but not listed.

The work is cut into steps so that the catch-up reader, which runs it between its own reads, still reads what is
new every interval: a step is a batch of listing requests, or one shard's comparison and repair.

Pure parts (`due`, `compare`, `proof`) are table-tested. `Census` keeps the listing by shard (spawn.census_listing):
in memory, packed (8 bytes a revision id and about 200 bytes a page, measured: some 300 MB for 10 million revisions
on a million pages), or, given a directory, spilled to a file per shard, so that the node holds one shard's
listing at a time.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Collection, Mapping

from shared.census_wire import MAX_IDS, CensusReport, ShardProof
from shared.dump_wire import wire_time
from shared.revisions.store import RevisionStore
from spawn.census_listing import Listing
from spawn.mediawiki import MAX_TITLES, BadResponse, MediaWikiClient, api_timestamp, listed

LIST_BATCH = 20         # listing requests per step


def due(*, now: datetime, after: datetime | None, finished_at: datetime | None, every_s: float) -> bool:
    """Whether a caught-up set's census starts now: not before the hub's `after` (the last census it heard of plus
    the interval), nor before this reader's own last one plus the interval (the hub may not have heard of it
    yet)."""
    own = None if finished_at is None else finished_at + timedelta(seconds=every_s)
    return all(t is None or now >= t for t in (after, own))


@dataclass(frozen=True)
class PageComparison:
    missing: tuple[int, ...]        # listed by the wiki, not stored
    extra: tuple[int, ...]          # stored, not listed by the wiki


def compare(listed: Collection[int], stored: Collection[int]) -> PageComparison:
    wiki, mine = set(listed), set(stored)
    return PageComparison(tuple(sorted(wiki - mine)), tuple(sorted(mine - wiki)))


def proof(shard: int, listed: Mapping[int, Collection[int]], stored: Mapping[int, Collection[int]],
          repaired: int) -> ShardProof:
    """A shard's proof from the wiki's ids and the stored ones per page (after the repair), `repaired` of them
    written by it."""
    missing: list[int] = []
    extra: list[int] = []
    for page_id, ids in listed.items():
        c = compare(ids, stored.get(page_id, ()))
        missing += c.missing
        extra += c.extra
    wiki = sum(len(set(ids)) for ids in listed.values())
    return ShardProof(shard=shard, pages=len(listed), wiki=wiki, stored=wiki - len(missing), repaired=repaired,
                      extra=len(extra), extra_ids=tuple(sorted(extra)[:MAX_IDS]),
                      missing_ids=tuple(sorted(missing)[:MAX_IDS]))


def parse_listing(body: dict) -> tuple[dict[int, list[int]], dict | None]:
    """One answer of allrevisions without content: {page id: its revision ids}, and the continuation. A malformed
    answer raises BadResponse (fetched again)."""
    items, more = listed(body, "allrevisions")
    pages: dict[int, list[int]] = {}
    for page in items:
        revisions = page.get("revisions") if isinstance(page, dict) else None
        page_id = page.get("pageid") if isinstance(page, dict) else None
        if not isinstance(revisions, list) or not isinstance(page_id, int):
            raise BadResponse("an allrevisions page without 'pageid' or 'revisions'")
        for r in revisions:
            rev_id = r.get("revid") if isinstance(r, dict) else None
            if not isinstance(rev_id, int):
                raise BadResponse("a revision without 'revid'")
            pages.setdefault(page_id, []).append(rev_id)
    return pages, more


@dataclass
class Census:
    """One census in progress. Not thread-safe: the reader's thread steps it; report() is read under the
    reader's lock."""
    wiki: str                               # the store's wiki key
    cut: datetime
    shards: int
    started_at: datetime
    namespaces: tuple[int, ...] | None = None
    content: bool = False
    spill: Path | None = None               # where the listing goes by shard (None: kept in memory)
    cont: dict | None = field(default_factory=dict)        # None once the listing is whole
    proofs: dict[int, ShardProof] = field(default_factory=dict)
    requests: int = 0
    listed_count: int = 0                   # ids listed so far: counted as they come, not summed per report
    finished_at: datetime | None = None

    def __post_init__(self) -> None:
        self.listing = Listing(self.shards, self.spill)

    def close(self) -> None:
        """Let go of the listing (its files, when spilled): the census ended, or its reader stopped."""
        self.listing.close()

    def step(self, client: MediaWikiClient, store: RevisionStore, now: Callable[[], datetime],
             **kw) -> bool:
        """One step: a batch of listing requests, or the next shard's comparison and repair. True while work is
        left."""
        if self.cont is not None:
            self._list(client, **kw)
            return True
        left = [s for s in range(self.shards) if s not in self.proofs]
        if left:
            self.proofs[left[0]] = self._prove(left[0], self.listing.shard(left[0]), client, store, **kw)
        if len(self.proofs) < self.shards:
            return True
        self.finished_at = now()
        self.close()
        return False

    def report(self) -> CensusReport:
        return CensusReport(cut=wire_time(self.cut), started_at=wire_time(self.started_at), shard_count=self.shards,
                            finished_at=None if self.finished_at is None else wire_time(self.finished_at),
                            listed=self.listed_count, requests=self.requests,
                            shards=tuple(self.proofs[s] for s in sorted(self.proofs)))

    def _list(self, client: MediaWikiClient, **kw) -> None:
        params = {"list": "allrevisions", "arvprop": "ids", "arvlimit": "max", "arvdir": "newer",
                  "arvend": api_timestamp(self.cut)}
        if self.namespaces is not None:
            params["arvnamespace"] = "|".join(str(n) for n in self.namespaces)
        for _ in range(LIST_BATCH):
            if self.cont is None:
                return
            pages, more = client.query({**params, **self.cont}, parse=parse_listing, **kw)
            self.requests += 1
            self.listing.add(pages)
            self.listed_count += sum(len(ids) for ids in pages.values())
            self.cont = more

    def _prove(self, shard: int, listed: Mapping[int, array], client: MediaWikiClient,
               store: RevisionStore, **kw) -> ShardProof:
        stored = {page_id: self._stored(store, page_id) for page_id in listed}
        missing = {page_id: compare(ids, stored[page_id]).missing for page_id, ids in listed.items()}
        wanted = sorted((rev_id, page_id) for page_id, ids in missing.items() for rev_id in ids)
        repaired = 0
        for i in range(0, len(wanted), MAX_TITLES):
            chunk = wanted[i:i + MAX_TITLES]
            found = client.revisions_of_pages({p for _, p in chunk}, [r for r, _ in chunk], content=self.content,
                                              **kw)
            self.requests += 1
            if found:
                store.write_pages(list(found.values()))
                repaired += sum(len(revs) for revs in found.values())
        for page_id in {p for _, p in wanted}:
            stored[page_id] = self._stored(store, page_id)
        return proof(shard, listed, stored, repaired)

    def _stored(self, store: RevisionStore, page_id: int) -> list[int]:
        return [r.rev_id for r in store.history(self.wiki, page_id, until=self.cut)]
