"""A scheduler's takeover in stages, pure (docs/coordination.md, "Taking over").

A scheduler that starts, becomes leader, or lost what its last tick left unsettled cannot prove any
subscription settled: it must hear every node's whole report and look at every subscription once. In one
tick that is a whole pass (at a million subscriptions, a minute), so it takes the nodes over a group a
tick, like a paced move:

* the tick that reads the snapshot whole takes no node; it looks at the subscriptions no live node is
  assigned (none, or a node gone while no scheduler led);
* each later tick takes the next pending nodes, in id order, until their assigned ids reach the step
  (at least one node): it polls them, and looks at every id they report or are assigned (their whole
  report, as for a node that restarted: blackwidow.tick_scope.report_changes);
* a pending node is not polled: it runs what the last leader sent it, and the keepalive process keeps it
  attached and its subscriptions named. Nothing is sent to or dropped on it, and an id routed to it waits,
  carried over, until it is taken. A node that joins during the takeover is polled at once.

Once every node is taken, every id was looked at once and what is not settled is carried over: the ticks
after are the steady scoped ones. A takeover whose ids all fit in one step is one whole tick, as before.
"""
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping

from blackwidow.store.coordination import AssignmentView


@dataclass(frozen=True)
class Takeover:
    pending: frozenset[str]         # live nodes not yet taken over: not polled, their ids not looked at


@dataclass(frozen=True)
class Stage:
    """A tick's part of a takeover: the takeover as the tick begins it, the nodes it takes, the nodes it does not
    poll, and, on the tick that starts one, the carry it starts from (else None)."""
    takeover: Takeover | None
    taking: frozenset[str] = frozenset()
    skipped: frozenset[str] = frozenset()
    carry: frozenset[str] | None = None


def stage(current: Takeover | None, carry: frozenset[str] | None, leased: bool, live: frozenset[str],
          holdings: Mapping[str, Collection[str]], assignments: Mapping[str, AssignmentView],
          subscriptions: Iterable[str], step: int) -> Stage:
    """This tick's stage. A tick with no carry (no last tick to go on) starts a takeover, unless tenants with a
    quota make every tick whole anyway (`leased`) or one step takes every node; the tick that starts it reads
    the snapshot whole, which is most of a tick already, so it takes no node and looks at the unheld ids."""
    if current is None and carry is None and not leased:
        started = begin(live, holdings, step)
        if started is not None:
            return Stage(started, skipped=started.pending, carry=unheld(subscriptions, assignments, live))
    if current is None:
        return Stage(None)
    taking = group(current, live, holdings, step)
    return Stage(current, taking, current.pending - taking)


def begin(live: Iterable[str], holdings: Mapping[str, Collection[str]], step: int) -> Takeover | None:
    """A takeover of the `live` nodes (`holdings`: the ids assigned to each), or None when one tick takes every
    one (`step` 0: always)."""
    nodes = frozenset(live)
    if step <= 0 or sum(len(holdings.get(n, ())) for n in nodes) <= step:
        return None
    return Takeover(nodes)


def group(takeover: Takeover, live: Collection[str], holdings: Mapping[str, Collection[str]],
          step: int) -> frozenset[str]:
    """The pending live nodes this tick takes over: in id order, until their assigned ids reach `step`, at least
    one."""
    taken: set[str] = set()
    ids = 0
    for node in sorted(takeover.pending):
        if node not in live:
            continue
        if taken and ids + len(holdings.get(node, ())) > step:
            break
        taken.add(node)
        ids += len(holdings.get(node, ()))
    return frozenset(taken)


def after(takeover: Takeover, taken: Collection[str], live: Collection[str]) -> Takeover | None:
    """What is still pending once `taken` were; None: the takeover is over."""
    pending = frozenset(n for n in takeover.pending if n not in taken and n in live)
    return Takeover(pending) if pending else None


def unheld(subscriptions: Iterable[str], assignments: Mapping[str, AssignmentView],
           live: Collection[str]) -> frozenset[str]:
    """The ids no live node is assigned (none, or one that is gone): no node taken over brings them into a
    takeover tick's scope, so its first tick looks at them."""
    return frozenset(sid for sid in subscriptions if (a := assignments.get(sid)) is None or a.node_id not in live)


def whole(changed: Mapping[str, frozenset[str] | None], taken: Iterable[str]) -> dict[str, frozenset[str] | None]:
    """The nodes' report changes (blackwidow.tick_scope.report_changes's `changed`) with each node taken this tick
    counted as a whole report, whatever it sent: a scheduler that lost its carry still holds their last reports."""
    return {**changed, **{node: None for node in taken}}
