"""A set's census (docs/dumps.md, "The census"): the proof, page-id shard by shard, that the stored history of a
wiki (or of its namespaces) equals the wiki's, up to a cut.

The files of a dump can be incomplete in ways no file shows: a file left out of the set, a dump run that missed
pages, a page whose history was merged or imported after the dump began. The catch-up's `caught_up_to` proves the
span after the dump's date read; the census proves the whole. It lists every revision id the wiki holds up to the
cut (`list=allrevisions` without content: 500 ids a request, the cheapest listing there is, through the identity's
budget in the backfill lane), then shard by shard compares each listed page's ids with the stored ones up to the
cut, writes what is missing (`prop=revisions&revids=`, 50 a request) and counts what is stored but not listed.

The listing is one stream through one identity's budget, so the set's catch-up reader writes it (`Census`), a step
of 20 requests at a time between its own reads, into the store by shard (spawn.census_listing). Once it is whole, the
hub hands each shard to a node by the shard's stable hash (blackwidow.census_plan), and that node proves it
(`prove_shard`, run by spawn.census_shards): the store reads and the repair are spread over the nodes.

Pure parts (`due`, `compare`, `proof`) are table-tested.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Collection, Mapping

from shared.census_wire import MAX_IDS, CensusReport, ShardDuty, ShardProof, listing_key
from shared.dump_wire import parse_time, wire_time
from shared.hashing import wiki_key
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
    """One census's listing, written by the set's catch-up reader into the store (spawn.census_listing) a step at a
    time; once whole, its shards are proven wherever the hub sends them (`prove_shard`). Not thread-safe: the
    reader's thread steps it; report() is read under the reader's lock."""
    set_id: str
    wiki: str                               # the store's wiki key
    cut: datetime
    shards: int
    started_at: datetime
    store: RevisionStore
    namespaces: tuple[int, ...] | None = None
    cont: dict | None = field(default_factory=dict)        # None once the listing is whole
    requests: int = 0
    listed_count: int = 0                   # ids listed so far: counted as they come, not summed per report

    def __post_init__(self) -> None:
        self.key = listing_key(self.set_id, wire_time(self.started_at))
        self.listing = Listing(self.store, self.wiki, self.key, self.shards)

    @property
    def listed_whole(self) -> bool:
        return self.cont is None

    def close(self) -> None:
        """Remove the listing: the hub holds the census finished."""
        self.listing.drop()

    def step(self, client: MediaWikiClient, **kw) -> bool:
        """A batch of listing requests, written to the store. True while the listing goes on."""
        if self.cont is None:
            return False
        params = {"list": "allrevisions", "arvprop": "ids", "arvlimit": "max", "arvdir": "newer",
                  "arvend": api_timestamp(self.cut)}
        if self.namespaces is not None:
            params["arvnamespace"] = "|".join(str(n) for n in self.namespaces)
        cont: dict | None = self.cont
        for _ in range(LIST_BATCH):
            if cont is None:
                break
            pages, cont = client.query({**params, **cont}, parse=parse_listing, **kw)
            self.requests += 1
            self.listing.add(pages)
            self.listed_count += sum(len(ids) for ids in pages.values())
            if cont is not None:
                self.cont = cont
        # whole only once written: a flush that fails leaves the last answer to be read again (its ids come twice,
        # which the comparison counts once)
        self.listing.flush()
        if cont is None:
            self.cont = None
        return self.cont is not None

    def report(self) -> CensusReport:
        return CensusReport(cut=wire_time(self.cut), started_at=wire_time(self.started_at), shard_count=self.shards,
                            listed=self.listed_count, requests=self.requests, listed_whole=self.listed_whole)


def prove_shard(duty: ShardDuty, client: MediaWikiClient, store: RevisionStore, **kw) -> ShardProof:
    """One shard of a census proven: its listing read from the store, each listed page's ids compared with those
    stored up to the cut, what is missing written (50 a request, content when the set stores it), the proof
    counted after the repair."""
    wiki, cut = wiki_key(duty.wiki), parse_time(duty.cut)
    listed = store.listing(wiki, listing_key(duty.set_id, duty.started_at), duty.shard)
    stored = store.stored_ids(wiki, listed, cut)
    missing = {page_id: compare(ids, stored[page_id]).missing for page_id, ids in listed.items()}
    wanted = sorted((rev_id, page_id) for page_id, ids in missing.items() for rev_id in ids)
    repaired = requests = 0
    for i in range(0, len(wanted), MAX_TITLES):
        chunk = wanted[i:i + MAX_TITLES]
        found = client.revisions_of_pages({p for _, p in chunk}, [r for r, _ in chunk], content=duty.content, **kw)
        requests += 1
        if found:
            store.write_pages(list(found.values()))
            repaired += sum(len(revs) for revs in found.values())
    stored.update(store.stored_ids(wiki, {p for _, p in wanted}, cut))
    return replace(proof(duty.shard, listed, stored, repaired), requests=requests)
