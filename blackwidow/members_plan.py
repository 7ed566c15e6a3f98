"""Category sets, the tick's rules for their listings (docs/sets.md, "Category sets"). Pure.

A category set's members are listed by one live node (`readers`: its node while it lives, else the live node
listing the fewest), which reads `list=categorymembers` again every interval and reports the listing in parts, one
per poll (shared.members_wire). `taken_in` takes each part once, in order, from the set's own node only: a listing
is held only once every part of it came in, and only then may the set's subscriptions follow it
(blackwidow.store.members). A lost report is asked for again; a listing that changed while coming in starts over.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Iterable, Mapping

from blackwidow.dump_plan import per_node, placed_readers
from shared.dump_wire import DONE, FAILED, parse_time
from shared.hashing import wiki_key
from shared.members_wire import Member, MembersDuty, MembersReport


@dataclass(frozen=True)
class ListingState:
    """A category set's listing as the tick sees it."""
    set_id: str
    wiki: str
    tenant_id: str
    category: str
    depth: int = 0
    node: str | None = None
    held: str | None = None         # the digest of the listing held whole (None: none yet)
    receiving: str | None = None    # the listing coming in
    next_part: int = 0              # the part of it wanted next
    total: int = 0                  # members of the held listing
    read_at: datetime | None = None
    requests: int = 0
    error: str | None = None

    def duty(self, interval_s: float) -> MembersDuty:
        return MembersDuty(set_id=self.set_id, wiki=self.wiki, category=self.category, depth=self.depth,
                           identity=wiki_key(self.wiki), tenants=(self.tenant_id,), interval_s=interval_s,
                           held=self.held, receiving=self.receiving, next_part=self.next_part)


@dataclass(frozen=True)
class Intake:
    """What a tick writes of a set's listing: one part of listing `digest`; `complete`: it was the last, so the
    members no part of it named leave the set."""
    digest: str
    members: tuple[Member, ...]
    complete: bool


def readers(listings: Mapping[str, ListingState], live: Iterable[str]) -> dict[str, ListingState]:
    """Each listing with a live node: its node while it lives, else the live node listing the fewest."""
    return placed_readers(listings, live, lambda s, node: replace(s, node=node))


def duties(listings: Mapping[str, ListingState], interval_s: float) -> dict[str, tuple[MembersDuty, ...]]:
    return per_node(listings, interval_s)


def taken_in(listings: Mapping[str, ListingState], reports: Mapping[str, Mapping[str, MembersReport]]
             ) -> tuple[dict[str, ListingState], dict[str, Intake]]:
    """The listings after this tick's polls, and the parts to write. Only the set's node is heard."""
    out, intakes = dict(listings), {}
    for sid, s in listings.items():
        report = reports.get(s.node or "", {}).get(sid)
        if report is None:
            continue
        heard = replace(s, requests=report.requests, error=report.error,
                        read_at=_time(report.read_at) or s.read_at)
        after, intake = _take(heard, report)
        out[sid] = after
        if intake is not None:
            intakes[sid] = intake
    return out, intakes


def _take(s: ListingState, report: MembersReport) -> tuple[ListingState, Intake | None]:
    if report.digest is None:
        return s, None                                  # not read yet
    if report.digest == s.held:
        return replace(s, receiving=None, next_part=0, total=report.total), None
    if report.part is None:
        return s, None                                  # it thinks the hub holds it: the next duty says not
    if report.digest == s.receiving and report.part == s.next_part:
        following = s.next_part + 1
    elif report.part == 0:
        following = 1                                   # a listing starts (or starts over) at its first part
    else:
        return s, None                                  # a part already taken, or of a listing not coming in
    if following >= report.parts:
        return (replace(s, held=report.digest, receiving=None, next_part=0, total=report.total),
                Intake(report.digest, report.members, complete=True))
    return (replace(s, receiving=report.digest, next_part=following),
            Intake(report.digest, report.members, complete=False))


def set_state(file_states: Iterable[str], enabled: bool, listed: bool) -> str:
    """What a category set shows: `disabled`; `listing` until its members are first known; `failed` while a dump
    file failed, `bootstrapping` while its files are read; then `following`: its pages are subscriptions."""
    states = list(file_states)
    if not enabled:
        return "disabled"
    if not listed:
        return "listing"
    if any(s == FAILED for s in states):
        return "failed"
    if not all(s == DONE for s in states):
        return "bootstrapping"
    return "following"


def _time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None
