"""A set's census: the proof, shard by shard, that the stored history of a wiki equals the wiki's (docs/dumps.md,
"The census"). The JSON shape a catch-up reader reports inside its CatchUpReport. Pure.

A shard is a page-id hash bucket (`shard_of`). Per shard the census counts the revisions the wiki lists up to its
cut, those of them stored (after its repair), those it wrote because they were missing, and those stored that the
wiki does not list; a shard is proven when the first two are equal and the last is 0.
"""
from __future__ import annotations

from dataclasses import dataclass

from shared.errors import ValidationError
from shared.hashing import stable_hash
from shared.wire_fields import required
from shared.wire_values import count_field, iso_field

MAX_IDS = 20        # revision ids a shard names of what differs: enough to look at, bounded whatever the size
MAX_SHARDS = 256        # a finished census reports every shard in each status report: keep that small


def shard_of(page_id: int, shards: int) -> int:
    """The shard of a page: its id's stable hash modulo the shard count (the same on every node and release)."""
    return stable_hash(str(page_id)) % shards


@dataclass(frozen=True)
class ShardProof:
    shard: int
    pages: int              # pages the wiki lists revisions of, up to the cut
    wiki: int               # revisions the wiki lists up to the cut
    stored: int             # of those, stored once the census's repair wrote what was missing
    repaired: int = 0       # written by the census: missing before it
    extra: int = 0          # stored revisions of those pages, up to the cut, that the wiki does not list
    extra_ids: tuple[int, ...] = ()       # the first MAX_IDS of them
    missing_ids: tuple[int, ...] = ()     # the first MAX_IDS the repair could not store

    @property
    def missing(self) -> int:
        return self.wiki - self.stored

    @property
    def proven(self) -> bool:
        return self.stored == self.wiki and self.extra == 0

    def to_dict(self) -> dict:
        return {"shard": self.shard, "pages": self.pages, "wiki": self.wiki, "stored": self.stored,
                "repaired": self.repaired, "extra": self.extra, "extra_ids": list(self.extra_ids),
                "missing_ids": list(self.missing_ids)}

    @classmethod
    def from_dict(cls, body: dict) -> "ShardProof":
        proof = cls(shard=_count(body, "shard"), pages=_count(body, "pages"), wiki=_count(body, "wiki"),
                    stored=_count(body, "stored"), repaired=_count(body, "repaired", optional=True),
                    extra=_count(body, "extra", optional=True), extra_ids=_ids(body, "extra_ids"),
                    missing_ids=_ids(body, "missing_ids"))
        if proof.stored > proof.wiki:
            raise ValidationError("'stored' counts the wiki's revisions: at most 'wiki'", field="stored")
        return proof


@dataclass(frozen=True)
class CensusReport:
    """One census of a set: in progress (`finished_at` None; `shards` holds the shards proven so far) or
    finished (every shard). `cut`: revisions up to it are compared; `listed`: revisions the wiki listed so far;
    `requests` spent, listing and repair."""
    cut: str
    started_at: str
    shard_count: int
    finished_at: str | None = None
    listed: int = 0
    requests: int = 0
    shards: tuple[ShardProof, ...] = ()

    def to_dict(self) -> dict:
        body = {"cut": self.cut, "started_at": self.started_at, "shard_count": self.shard_count,
                "listed": self.listed, "requests": self.requests, "shards": [s.to_dict() for s in self.shards]}
        if self.finished_at is not None:
            body["finished_at"] = self.finished_at
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "CensusReport":
        count = _count(body, "shard_count")
        if not 1 <= count <= MAX_SHARDS:
            raise ValidationError(f"'shard_count' must be 1 to {MAX_SHARDS}", field="shard_count")
        shards = required(body, "shards", list, optional=True, default=[])
        if not all(isinstance(s, dict) for s in shards):
            raise ValidationError("'shards' must be a list of objects", field="shards")
        proofs = tuple(ShardProof.from_dict(s) for s in shards)
        if any(p.shard >= count for p in proofs) or len({p.shard for p in proofs}) != len(proofs):
            raise ValidationError("'shards' must name each shard below 'shard_count' once", field="shards")
        return cls(cut=iso_field(body, "cut"), started_at=iso_field(body, "started_at"), shard_count=count,
                   finished_at=iso_field(body, "finished_at", optional=True),
                   listed=_count(body, "listed", optional=True), requests=_count(body, "requests", optional=True),
                   shards=proofs)


def _count(body: object, name: str, *, optional: bool = False) -> int:
    return count_field(body, name, optional=optional) or 0


def _ids(body: object, name: str) -> tuple[int, ...]:
    given = required(body, name, list, optional=True, default=[])
    if len(given) > MAX_IDS or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in given):
        raise ValidationError(f"'{name}' must be a list of at most {MAX_IDS} revision ids", field=name)
    return tuple(given)
