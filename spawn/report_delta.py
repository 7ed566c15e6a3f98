"""Reports that carry only what changed, pure (docs/coordination.md, "Bounded polls").

A node holding a thousand subscriptions reported every status at every poll, spec included: a million
statuses per poll cycle across a cluster, parsed by the hub each time although almost none had changed.
Each report now gets a token. A poll whose `since` names the token of this node's latest report (the hub
received that report whole and remembers it) is answered with the statuses that differ from it and the ids
gone since; any other poll (a hub that restarted, lost an answer, or polls for the first time) gets every
status. The answer to a poll's first request is fixed when it is made; the poll's further requests page
through that same answer, so the pages of one poll are one view of the node.
"""
import bisect
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from shared.wire import SubscriptionStatus


@dataclass(frozen=True)
class Answer:
    """One report as issued: its token, its statuses in id order, and whether it is a delta."""
    token: str
    statuses: tuple[SubscriptionStatus, ...]
    ids: tuple[str, ...]                         # the statuses' ids, for paging
    delta: bool
    removed: tuple[str, ...]
    # every status the node held when it was issued: what the next delta is measured against
    held: Mapping[str, SubscriptionStatus] = field(repr=False, default_factory=dict)


def answer(latest: Answer | None, since: str | None, current: Iterable[SubscriptionStatus], token: str) -> Answer:
    """The report to issue now as `token`, given the latest one issued and the poll's `since`."""
    held = {s.id: s for s in current}
    if latest is not None and since is not None and since == latest.token:
        before = latest.held
        changed = sorted((s for i, s in held.items() if before.get(i) != s), key=lambda s: s.id)
        removed = tuple(sorted(i for i in before if i not in held))
        return Answer(token, tuple(changed), tuple(s.id for s in changed), True, removed, held)
    ordered = sorted(held.values(), key=lambda s: s.id)
    return Answer(token, tuple(ordered), tuple(s.id for s in ordered), False, (), held)


def page(issued: Answer, after: str | None, limit: int) -> tuple[tuple[SubscriptionStatus, ...], str | None]:
    """At most `limit` of the answer's statuses with ids after `after`, and the last id when more follow."""
    start = 0 if after is None else bisect.bisect_right(issued.ids, after)
    items = issued.statuses[start:start + limit]
    more = start + limit < len(issued.statuses)
    return items, items[-1].id if more and items else None
