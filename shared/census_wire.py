"""A set's census: the proof, shard by shard, that the stored history of a wiki equals the wiki's (docs/dumps.md,
"The census"). The JSON shapes: the census a catch-up reader reports inside its CatchUpReport, the shards the hub
hands to nodes to prove (`ShardDuty`) and what they report back (`ShardReport`). Pure.

A shard is a page-id hash bucket (`shard_of`). Per shard the census counts the revisions the wiki lists up to its
cut, those of them stored (after its repair), those it wrote because they were missing, and those stored that the
wiki does not list; a shard is proven when the first two are equal and the last is 0.
"""
from __future__ import annotations

from dataclasses import dataclass

from shared.errors import ValidationError
from shared.hashing import stable_hash
from shared.wire_fields import required
from shared.wire_values import count_field, iso_field, namespaces_field, shard_count_field, tenants_field

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
    requests: int = 0       # the repair's
    node: str | None = None     # the node that proved it (the hub's record; a node reports none)

    @property
    def missing(self) -> int:
        return self.wiki - self.stored

    @property
    def proven(self) -> bool:
        return self.stored == self.wiki and self.extra == 0

    def to_dict(self) -> dict:
        return {"shard": self.shard, "pages": self.pages, "wiki": self.wiki, "stored": self.stored,
                "repaired": self.repaired, "extra": self.extra, "extra_ids": list(self.extra_ids),
                "missing_ids": list(self.missing_ids), "requests": self.requests,
                **({} if self.node is None else {"node": self.node})}

    @classmethod
    def from_dict(cls, body: dict) -> "ShardProof":
        proof = cls(shard=_count(body, "shard"), pages=_count(body, "pages"), wiki=_count(body, "wiki"),
                    stored=_count(body, "stored"), repaired=_count(body, "repaired", optional=True),
                    extra=_count(body, "extra", optional=True), extra_ids=_ids(body, "extra_ids"),
                    missing_ids=_ids(body, "missing_ids"), requests=_count(body, "requests", optional=True),
                    node=required(body, "node", str, optional=True))
        if proof.stored > proof.wiki:
            raise ValidationError("'stored' counts the wiki's revisions: at most 'wiki'", field="stored")
        return proof


@dataclass(frozen=True)
class CensusReport:
    """One census of a set: in progress (`finished_at` None; `shards` holds the shards proven so far) or
    finished (every shard). `cut`: revisions up to it are compared; `listed`: revisions the wiki listed so far;
    `listed_whole`: the listing is written whole, so its shards may be proven (on any node); `requests`: the
    listing's (each shard's repair counts its own). `started_at` names the census."""
    cut: str
    started_at: str
    shard_count: int
    finished_at: str | None = None
    listed: int = 0
    requests: int = 0
    shards: tuple[ShardProof, ...] = ()
    listed_whole: bool = False

    @property
    def all_requests(self) -> int:
        return self.requests + sum(p.requests for p in self.shards)

    def to_dict(self) -> dict:
        body = {"cut": self.cut, "started_at": self.started_at, "shard_count": self.shard_count,
                "listed": self.listed, "requests": self.requests, "shards": [s.to_dict() for s in self.shards]}
        if self.finished_at is not None:
            body["finished_at"] = self.finished_at
        if self.listed_whole:
            body["listed_whole"] = True
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "CensusReport":
        count = shard_count_field(body, MAX_SHARDS)
        shards = required(body, "shards", list, optional=True, default=[])
        if not all(isinstance(s, dict) for s in shards):
            raise ValidationError("'shards' must be a list of objects", field="shards")
        proofs = tuple(ShardProof.from_dict(s) for s in shards)
        if any(p.shard >= count for p in proofs) or len({p.shard for p in proofs}) != len(proofs):
            raise ValidationError("'shards' must name each shard below 'shard_count' once", field="shards")
        return cls(cut=iso_field(body, "cut"), started_at=iso_field(body, "started_at"), shard_count=count,
                   finished_at=iso_field(body, "finished_at", optional=True),
                   listed=_count(body, "listed", optional=True), requests=_count(body, "requests", optional=True),
                   shards=proofs, listed_whole=required(body, "listed_whole", bool, optional=True, default=False))


def listing_key(set_id: str, started_at: str) -> str:
    """The name a census's listing is stored under: its set and its start (a census cut short leaves its own rows,
    never a later census's)."""
    return f"{set_id}/{started_at}"


@dataclass(frozen=True)
class ShardDuty:
    """Prove one shard of a set's census (docs/dumps.md, "The census"): read its listing from the store (written
    whole by the set's catch-up reader under `listing_key`), compare it with the stored history
    up to `cut`, write what is missing (through `identity`'s budget in the backfill lane, for `tenants`) and report
    the proof."""
    set_id: str
    started_at: str
    wiki: str
    cut: str
    shard: int
    shard_count: int
    identity: str | None = None
    tenants: tuple[str, ...] = ()
    namespaces: tuple[int, ...] | None = None
    content: bool = False

    @property
    def key(self) -> tuple[str, str, int]:
        return self.set_id, self.started_at, self.shard

    def to_dict(self) -> dict:
        body = {"set_id": self.set_id, "started_at": self.started_at, "wiki": self.wiki, "cut": self.cut,
                "shard": self.shard, "shard_count": self.shard_count, "tenants": list(self.tenants),
                "content": self.content}
        if self.identity is not None:
            body["identity"] = self.identity
        if self.namespaces is not None:
            body["namespaces"] = list(self.namespaces)
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "ShardDuty":
        count = shard_count_field(body, MAX_SHARDS)
        shard = _count(body, "shard")
        if shard >= count:
            raise ValidationError("'shard' must be below 'shard_count'", field="shard")
        return cls(set_id=required(body, "set_id", str), started_at=iso_field(body, "started_at"),
                   wiki=required(body, "wiki", str), cut=iso_field(body, "cut"), shard=shard, shard_count=count,
                   identity=required(body, "identity", str, optional=True), tenants=tenants_field(body),
                   namespaces=namespaces_field(body),
                   content=required(body, "content", bool, optional=True, default=False))


@dataclass(frozen=True)
class ShardReport:
    """A node's work on a ShardDuty: its proof once done, else the last error (tried again)."""
    set_id: str
    started_at: str
    shard: int
    proof: ShardProof | None = None
    error: str | None = None

    def to_dict(self) -> dict:
        body: dict = {"set_id": self.set_id, "started_at": self.started_at, "shard": self.shard}
        if self.proof is not None:
            body["proof"] = self.proof.to_dict()
        if self.error is not None:
            body["error"] = self.error
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "ShardReport":
        proof = required(body, "proof", dict, optional=True)
        report = cls(set_id=required(body, "set_id", str), started_at=iso_field(body, "started_at"),
                     shard=_count(body, "shard"), proof=None if proof is None else ShardProof.from_dict(proof),
                     error=required(body, "error", str, optional=True))
        if report.proof is not None and report.proof.shard != report.shard:
            raise ValidationError("'proof' must be of the report's 'shard'", field="proof")
        return report


def _count(body: object, name: str, *, optional: bool = False) -> int:
    return count_field(body, name, optional=optional) or 0


def _ids(body: object, name: str) -> tuple[int, ...]:
    given = required(body, name, list, optional=True, default=[])
    if len(given) > MAX_IDS or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in given):
        raise ValidationError(f"'{name}' must be a list of at most {MAX_IDS} revision ids", field=name)
    return tuple(given)
