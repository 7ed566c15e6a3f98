"""Category sets' membership between hub and spawns (docs/sets.md, "Category sets"). Pure.

Hub -> spawn, inside a Poll's first request:
  `members`  [MembersDuty, ...]          the categories whose members this node lists (list=categorymembers)
Spawn -> hub, in a StatusReport's first page:
  `members`  {set id: MembersReport}     the listing as the node last read it, one part per report

A listing can hold more members than one report should carry, so it travels in parts of at most PART members,
one per poll, and the hub says in each duty which part it wants next: a lost report is sent again, a part is
never taken twice, and the listing's digest names it whole. A listing equal to the one the hub holds travels as
its digest alone.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from shared.errors import ValidationError
from shared.wire_fields import required
from shared.wire_values import tenants_field

PART = 2_000            # members per report: ~100 KB of JSON


@dataclass(frozen=True, order=True)
class Member:
    """A page in the category (or, with depth, in one of its subcategories)."""
    page_id: int
    ns: int
    title: str

    def to_list(self) -> list:
        return [self.page_id, self.ns, self.title]

    @classmethod
    def from_list(cls, item: object) -> "Member":
        if (not isinstance(item, list) or len(item) != 3 or not all(_count(v) for v in item[:2])
                or not isinstance(item[2], str) or not item[2]):
            raise ValidationError("a member is [page_id, ns, title]", field="members")
        return cls(item[0], item[1], item[2])


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def digest(members: Iterable[Member]) -> str:
    """One name for a listing: equal listings (the same pages under the same titles) have equal digests, in any
    order."""
    h = hashlib.sha256()
    for m in sorted(set(members)):
        h.update(f"{m.page_id}\t{m.ns}\t{m.title}\n".encode("utf-8"))
    return h.hexdigest()[:32]


def parts(members: Sequence[Member]) -> int:
    """How many parts a listing travels in (an empty listing is one empty part)."""
    return max(1, -(-len(members) // PART))


def part(members: Sequence[Member], index: int) -> tuple[Member, ...]:
    """Part `index` of a listing sorted by page id."""
    ordered = sorted(members)
    return tuple(ordered[index * PART:(index + 1) * PART])


@dataclass(frozen=True)
class MembersDuty:
    """List the members of `category` on `wiki` (its api.php URL): the pages in it and, `depth` levels down, in
    its subcategories; again every `interval_s`. Requests go through `identity`'s budget in the backfill lane,
    for `tenants`. `held`: the digest of the listing the hub holds (None: none yet); `receiving` and `next_part`:
    the listing the hub is taking in, and the part of it it wants next."""
    set_id: str
    wiki: str
    category: str               # with its namespace prefix: "Category:Physics"
    depth: int = 0
    identity: str | None = None
    tenants: tuple[str, ...] = ()
    interval_s: float = 300.0
    held: str | None = None
    receiving: str | None = None
    next_part: int = 0

    def to_dict(self) -> dict:
        body = {"set_id": self.set_id, "wiki": self.wiki, "category": self.category, "depth": self.depth,
                "tenants": list(self.tenants), "interval_s": self.interval_s, "next_part": self.next_part}
        for name in ("identity", "held", "receiving"):
            if getattr(self, name) is not None:
                body[name] = getattr(self, name)
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "MembersDuty":
        interval = required(body, "interval_s", (int, float), optional=True, default=300.0)
        if isinstance(interval, bool) or not 0 < interval < math.inf:
            raise ValidationError("'interval_s' must be positive", field="interval_s")
        depth = required(body, "depth", int, optional=True, default=0)
        if depth < 0:
            raise ValidationError("'depth' must be 0 or more", field="depth")
        next_part = required(body, "next_part", int, optional=True, default=0)
        if next_part < 0:
            raise ValidationError("'next_part' must be 0 or more", field="next_part")
        return cls(set_id=required(body, "set_id", str), wiki=required(body, "wiki", str),
                   category=required(body, "category", str), depth=depth,
                   identity=required(body, "identity", str, optional=True), tenants=tenants_field(body),
                   interval_s=float(interval), held=required(body, "held", str, optional=True),
                   receiving=required(body, "receiving", str, optional=True), next_part=next_part)


@dataclass(frozen=True)
class MembersReport:
    """A category's listing as its node last read it: `digest` names it whole, `total` members in `parts` parts,
    of which this report carries part `part` (`members`), or none when the hub holds it already (`members` empty,
    `part` None). Before the first listing is read, `digest` is None. `requests` spent by this node's reader;
    `error`: why the last reading failed (the listing before it stands)."""
    set_id: str
    digest: str | None = None
    total: int = 0
    parts: int = 0
    part: int | None = None
    members: tuple[Member, ...] = ()
    read_at: str | None = None          # ISO, when the listing was read
    requests: int = 0
    error: str | None = None

    def to_dict(self) -> dict:
        body: dict = {"set_id": self.set_id, "total": self.total, "parts": self.parts, "requests": self.requests}
        for name in ("digest", "part", "read_at", "error"):
            if getattr(self, name) is not None:
                body[name] = getattr(self, name)
        if self.part is not None:
            body["members"] = [m.to_list() for m in self.members]
        return body

    @classmethod
    def from_dict(cls, body: dict) -> "MembersReport":
        counts = {}
        for name in ("total", "parts", "requests"):
            value = required(body, name, int, optional=True, default=0)
            if value < 0:
                raise ValidationError(f"'{name}' must be a count", field=name)
            counts[name] = value
        part_index = required(body, "part", int, optional=True)
        if part_index is not None and not 0 <= part_index < counts["parts"]:
            raise ValidationError("'part' must be below 'parts'", field="part")
        members = tuple(Member.from_list(m) for m in required(body, "members", list, optional=True, default=[]))
        if len(members) > PART:
            raise ValidationError(f"a part holds at most {PART} members", field="members")
        return cls(set_id=required(body, "set_id", str), digest=required(body, "digest", str, optional=True),
                   part=part_index, members=members, read_at=required(body, "read_at", str, optional=True),
                   error=required(body, "error", str, optional=True), **counts)
