"""Pure reload planning: desired assignments + what nodes report -> Put/Drop actions. No I/O.

Hard reload (the live node set changed): every assignment was recomputed; send everything a node
cannot prove it already runs, and drop whatever sits on the wrong node once the right node has it
(acknowledged or reported): make before break, so a move never leaves a page unfetched.
Soft reload (same node set): drop stale, send new or changed, re-send failed (drop, then put),
missing or unacknowledged. In both, a node that reports the desired spec already is left alone (adopted).
Nodes absent from `reported` did not answer this tick: nothing is sent to them or dropped there.
"""
from dataclasses import dataclass, field
from typing import Collection, Container, Iterator, Mapping

from shared.errors import ValidationError
from shared.wire import SubscriptionSpec, SubscriptionStatus

HARD = "hard"
SOFT = "soft"


@dataclass(frozen=True, slots=True)
class Put:
    node_id: str
    spec: SubscriptionSpec
    reason: str      # new | moved | missing | changed | failed | unacked | unverified


@dataclass(frozen=True, slots=True)
class Drop:
    node_id: str
    subscription_id: str
    reason: str      # moved | stale | failed (dropped to be put again)


@dataclass(frozen=True, slots=True)
class Adopt:
    """The node already runs the desired spec: record it as acknowledged, send nothing."""
    node_id: str
    subscription_id: str


@dataclass(frozen=True)
class Plan:
    kind: str | None              # hard | soft | None (nothing to send)
    puts: tuple[Put, ...] = ()
    drops: tuple[Drop, ...] = ()
    adopts: tuple[Adopt, ...] = field(default=())

    @property
    def reasons(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        actions: tuple[Put | Drop, ...] = (*self.puts, *self.drops)
        for action in actions:
            counts[action.reason] = counts.get(action.reason, 0) + 1
        return counts


def _reported_spec(status: SubscriptionStatus) -> SubscriptionSpec | None:
    if status.spec is None:
        return None
    try:
        return SubscriptionSpec.from_dict(status.spec)
    except ValidationError:
        return None


def unverified(status: SubscriptionStatus) -> bool:
    """The node did not say which spec it runs: a hard reload re-sends it rather than trust an acknowledgement
    (the one place for that rule; blackwidow.tick_scope looks at these ids on a node-set change for it)."""
    return status.spec is None


def _fields(spec: SubscriptionSpec) -> dict:
    """The spec as a field dict, without copying when the dataclass keeps one."""
    return getattr(spec, "__dict__", None) or spec.to_dict()


def _put_reason(node: str, spec: SubscriptionSpec, status: SubscriptionStatus | None,
                acked_node: str | None, hard: bool, may_retry_failed: bool) -> str | None:
    """Why `spec` must be sent to `node`, or None when the node already runs it."""
    if status is None:
        if acked_node is None:
            return "new"
        return "missing" if acked_node == node else "moved"
    running: SubscriptionSpec | None
    if status.spec is not None and status.spec == _fields(spec):
        running = spec                       # the usual case, without parsing what the node reported
    else:
        running = _reported_spec(status)
        if status.spec is not None and running != spec:
            return "changed"                 # includes an unparseable spec: replace it
    if status.state == "failed":
        return "failed" if may_retry_failed else None
    if not unverified(status):
        return None
    # trust our acknowledgement only on a soft reload
    if hard:
        return "unverified"
    return None if acked_node == node else "unacked"


def plan(desired: Mapping[str, str],
         specs: Mapping[str, SubscriptionSpec],
         reported: Mapping[str, Mapping[str, SubscriptionStatus]],
         acked: Mapping[str, str],
         node_set_changed: bool,
         retry_failed: Container[str] | None = None,
         only: Collection[str] | None = None) -> Plan:
    """Actions that bring reachable nodes to `desired`.

    desired: {sub_id: node_id}; specs: {sub_id: spec} of every desired id (a view: a million (node, spec) pairs
    would cost a tuple each); reported: {node_id: {sub_id: status}} for nodes that answered;
    acked: {sub_id: node_id} of acknowledged sends; retry_failed: failed subscriptions that may be
    re-sent now (None: all of them); only: plan for these ids alone (`desired` and `acked` then need hold
    no others; blackwidow.tick_scope), None: for every id desired or reported.
    """
    hard = node_set_changed
    puts, drops, adopts = [], [], []
    by_node: dict[str, list[str]] = {}
    for sub_id, node in desired.items():
        by_node.setdefault(node, []).append(sub_id)
    for node in sorted(by_node):             # actions in (node, subscription) order
        on_node = reported.get(node)
        if on_node is None:
            continue
        for sub_id in sorted(by_node[node]):
            spec = specs[sub_id]
            status = on_node.get(sub_id)
            may_retry = retry_failed is None or sub_id in retry_failed
            reason = _put_reason(node, spec, status, acked.get(sub_id), hard, may_retry)
            if reason == "failed":
                # an equal spec would change nothing on the node: drop first so the put starts it afresh
                drops.append(Drop(node, sub_id, "failed"))
            if reason is not None:
                puts.append(Put(node, spec, reason))
            elif status is not None and acked.get(sub_id) != node and status.state != "failed":
                adopts.append(Adopt(node, sub_id))
    for node, sub_id in copies(reported, only):
        want = desired.get(sub_id)
        if want is None:
            drops.append(Drop(node, sub_id, "stale"))
        elif want != node and (acked.get(sub_id) == want or sub_id in reported.get(want, ())):
            # make before break: the old copy goes once the new node has acknowledged it
            drops.append(Drop(node, sub_id, "moved"))
    if hard:
        kind = HARD
    elif puts or drops:
        kind = SOFT
    else:
        kind = None
    return Plan(kind, tuple(puts), tuple(drops), tuple(adopts))


def copies(reported: Mapping[str, Collection[str]], only: Collection[str] | None) -> Iterator[tuple[str, str]]:
    """(node, sub_id) of every reported copy, in (node, subscription) order; of the ids in `only` alone when
    given: a lookup per id and node, or a pass over every copy when that costs less. The one place for that
    choice: the plan's drops and the poll lists (blackwidow.poll_pages.named) both look for copies so."""
    if only is not None and len(only) * len(reported) <= sum(len(on_node) for on_node in reported.values()):
        ids = sorted(only)
        for node in sorted(reported):
            on_node = reported[node]
            for sub_id in ids:
                if sub_id in on_node:
                    yield node, sub_id
        return
    for node in sorted(reported):
        for sub_id in sorted(reported[node]):
            if only is None or sub_id in only:
                yield node, sub_id
