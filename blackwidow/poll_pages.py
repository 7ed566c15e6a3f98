"""Bounded polls, pure: one node's poll as a series of bounded requests, and their answers as one report.

A node's list of assigned ids travels in pages of at most `page_ids` ids (with the leases of those ids):
one request when it fits, else the pages of one round (shared.wire.PollPage), in order. Every request
also asks for a page of at most `report_items` statuses after a cursor; the hub asks again until the
spawn says nothing follows. Requests go on past the last page of ids by repeating it (a repeated page
changes nothing on the spawn) until the report is whole, and from then on ask from past its end (a request
from no cursor asks for a new report). docs/coordination.md, "Bounded polls".
"""
from dataclasses import dataclass, field, replace
from typing import Collection, Container, Iterable, Mapping, Sequence

from blackwidow.reload import copies
from blackwidow.upstream.clock_check import ClockReading
from blackwidow.store.coordination import AssignmentView, SubscriptionView
from shared.census_wire import ShardDuty
from shared.dump_wire import CatchUpDuty, DumpDuty
from shared.feed_wire import FeedDuty, Nudge
from shared.members_wire import MembersDuty
from shared.wire import Budget, Lease, Poll, PollPage, ReportPage, StatusReport, SubscriptionStatus

# A spawn whose report cursor never reaches the end would keep a tick polling it forever.
MAX_REQUESTS = 10_000


class PagingError(Exception):
    """The answers do not make one report (the spawn restarted between them, or its cursor went back)."""


@dataclass(frozen=True)
class Paging:
    page_ids: int          # ids (with their leases) per request
    report_items: int      # statuses per answer


def named(assignments: Mapping[str, AssignmentView], reported: Mapping[str, Collection[str]],
          existing: Container[str], *, by_node: Mapping[str, Iterable[str]] | None = None,
          candidates: Collection[str] | None = None) -> dict[str, list[str]]:
    """{node id: the ids its poll names}: what is assigned to it, and the copies it last reported of
    subscriptions that still exist elsewhere. The hub drops those itself once their new node has them (make
    before break); left unnamed, a tick longer than the orphan timeout would have them dropped as orphans
    first. Only copies the hub no longer knows of are left to the orphan timer.

    by_node: the assignments grouped by node, when the caller keeps them so (Snapshot.by_node); candidates:
    the only ids that can have a copy elsewhere, when the caller knows them (what the last tick left
    unsettled: blackwidow.tick_scope), looked up on each node rather than passing over every copy."""
    if by_node is not None:
        lists = {node_id: list(ids) for node_id, ids in by_node.items() if ids}
    else:
        lists = {}
        for sub_id, assignment in assignments.items():
            lists.setdefault(assignment.node_id, []).append(sub_id)

    def elsewhere(node_id: str, sub_id: str) -> bool:
        return sub_id in existing and ((a := assignments.get(sub_id)) is None or a.node_id != node_id)

    for node_id, sub_id in copies(reported, candidates):
        if elsewhere(node_id, sub_id):
            lists.setdefault(node_id, []).append(sub_id)
    return lists


def split(ids: Sequence[str], page_ids: int) -> list[tuple[str, ...]]:
    """Sorted ids in pages; always at least one (an empty list is one empty page)."""
    ordered = sorted(ids)
    return [tuple(ordered[i:i + page_ids]) for i in range(0, len(ordered), page_ids)] or [()]


@dataclass(frozen=True)
class FeedPart:
    """A node's part of the change feed (shared.feed_wire): the feeds it reads, its nudges, the followed wikis."""
    duties: Mapping[str, FeedDuty] = field(default_factory=dict)
    changes: tuple[Nudge, ...] = ()
    followed: tuple[str, ...] = ()


@dataclass(frozen=True)
class DumpPart:
    """A node's part of the set subscriptions (shared.dump_wire, shared.members_wire, shared.census_wire): the files
    it reads, the catch-ups it runs, the category listings it reads, the census shards it proves."""
    files: tuple[DumpDuty, ...] = ()
    catch_up: tuple[CatchUpDuty, ...] = ()
    members: tuple[MembersDuty, ...] = ()
    census: tuple[ShardDuty, ...] = ()


def request(node_id: str, pages: list[tuple[str, ...]], index: int, round_id: str, leases: Mapping[str, Lease],
            budgets: Mapping[str, Budget], after: str | None, paging: Paging, since: str | None = None,
            feeds: FeedPart = FeedPart(), dumps: DumpPart = DumpPart()) -> Poll:
    """The `index`th request of a node's poll. Budgets ride on the first; leases with the page naming
    their subscription (any other lease on the first); past the last page the last one is repeated.
    `since`: the token of the node's last report received whole (the spawn may answer with changes only)."""
    last = min(index, len(pages) - 1)
    ids = pages[last]
    page_leases = {sid: leases[sid] for sid in ids if sid in leases}
    if index == 0 and len(leases) > len(page_leases):
        listed = {sid for page in pages for sid in page}
        page_leases.update((sid, lease) for sid, lease in leases.items() if sid not in listed)
    first = index == 0
    return Poll(node_id=node_id, assigned=ids, leases=page_leases,
                budgets=budgets if first else {},
                feeds=feeds.duties if first else {}, changes=feeds.changes if first else (),
                followed=feeds.followed if first else (), dumps=dumps.files if first else (),
                catch_up=dumps.catch_up if first else (), members=dumps.members if first else (),
                census=dumps.census if first else (),
                page=PollPage(round_id, last, len(pages)) if len(pages) > 1 else None,
                report=ReportPage(after, paging.report_items, since))


def more(index: int, pages: int, answer: StatusReport, after: str | None) -> bool:
    """Whether another request follows the `index`th (0-based) whose answer is `answer` (asked from `after`)."""
    if answer.next is not None and after is not None and answer.next <= after:
        raise PagingError(f"report cursor went back from {after!r} to {answer.next!r}")
    if index + 1 >= MAX_REQUESTS:
        raise PagingError(f"no end after {MAX_REQUESTS} requests")
    return index + 1 < pages or answer.next is not None


def cursor(after: str | None, answer: StatusReport) -> str:
    """The report cursor of the request after one asked from `after` and answered with `answer`. Once the
    report is whole, the requests that still carry pages of ids ask from past its end: a request from no
    cursor asks the spawn for a new report, which would not be the one this poll's answers make up."""
    if answer.next is not None:
        return answer.next
    if after is not None:
        return after
    return answer.subscriptions[-1].id if answer.subscriptions else ""


@dataclass(frozen=True)
class Merged:
    report: StatusReport
    statuses: dict[str, SubscriptionStatus]      # the report's statuses by id
    changed: frozenset[str] | None               # the ids a delta named (changed or removed); None: whole
    clock: ClockReading | None = None            # the node's clock against the hub's (the poll's best reading)


def merge(answers: list[StatusReport], known: Mapping[str, SubscriptionStatus] | None = None) -> StatusReport:
    """merged(...).report."""
    return merged(answers, known).report


def merged(answers: list[StatusReport], known: Mapping[str, SubscriptionStatus] | None = None) -> Merged:
    """The answers of one poll as one whole report: every status (a repeated id: the later one), the counts
    and identities of the last answer. A delta (spawn.report_delta) applies to `known`, the statuses of the
    report its poll named. Answers from two boots of the spawn, or from two reports, are not one view of it."""
    boots = {a.boot_id for a in answers}
    if len(boots) != 1:
        raise PagingError("the spawn restarted during the poll")
    if len({a.token for a in answers}) != 1:
        raise PagingError("the answers belong to different reports")
    first, last = answers[0], answers[-1]
    subs: dict[str, SubscriptionStatus] = {}
    changed: set[str] | None = None
    if first.delta:
        if known is None:
            raise PagingError("changes since a report the poll did not name")
        subs.update(known)
        changed = set()
        for gone in (i for a in answers for i in a.removed):
            subs.pop(gone, None)
            changed.add(gone)
    for a in answers:
        for s in a.subscriptions:
            subs[s.id] = s
            if changed is not None:
                changed.add(s.id)
    report = StatusReport(node_id=last.node_id, boot_id=last.boot_id, attached=last.attached,
                          subscriptions=tuple(subs.values()), sources=last.sources, identities=last.identities,
                          rejected=tuple(r for a in answers for r in a.rejected), token=first.token,
                          feeds=first.feeds, dumps=first.dumps, catch_up=first.catch_up, members=first.members,
                          census=first.census)
    return Merged(report, subs, frozenset(changed) if changed is not None else None)


def sharing_snapshot(answer: StatusReport, subs: Mapping[str, SubscriptionView]) -> StatusReport:
    """`answer` with each reported spec that equals the snapshot's replaced by the snapshot spec's own field
    dict, and its id and page key by the snapshot's strings when equal: the scheduler keeps every node's last
    report between ticks, and a million parsed copies of specs it already holds cost a gigabyte, of ids and page
    keys some 170 MB more. Compared by value as before (blackwidow.reload)."""
    shared = []
    for status in answer.subscriptions:
        sub = subs.get(status.id)
        if sub is not None:
            fields = vars(sub.spec)
            spec = fields if status.spec is not None and status.spec == fields else status.spec
            page_key = sub.page_key if status.page_key is not None and status.page_key == sub.page_key \
                else status.page_key
            status = replace(status, id=sub.id, spec=spec, page_key=page_key)
        shared.append(status)
    return replace(answer, subscriptions=tuple(shared))
