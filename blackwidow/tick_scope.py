"""Which subscriptions a tick must look at, pure (docs/coordination.md, "Steady ticks").

A tick's rules (blackwidow.decide) are a function of the snapshot and the nodes' reports. Between two ticks
on the same live node set almost nothing changes: a few subscriptions written by the admin API, a few
statuses a spawn reports as changed (its report is a delta since the last one the hub received), and the
subscriptions the last tick left unsettled (a send not yet acknowledged, a copy to drop once its new node
has it, a failed one waiting for its re-send). Every other subscription would get the same routing, no
action and no change to its row, so a tick looks only at

    scope = changed by the admin API | changed in a report | carried over from the last tick

and a million subscriptions cost what the few that changed cost. A node that answered with a whole report
(it restarted, or the hub lost its last one) adds every id it names and every id assigned to it. A change
of the live node set adds what it may move (`node_set_moves`): under rendezvous, what the nodes that left
held and what a node that joined outweighs its holder for; under modulo, what the nodes that left held, and
in each tick the keys of the bands the paced routing's frontier passes (blackwidow.rebalance); when those
bands are all of them at once, everything. Whatever else cannot be proven unchanged makes the tick look at everything
(`scope` returns None): a scheduler's first tick or a snapshot read again whole (unless the poller takes the
nodes over in stages instead: blackwidow.takeover), and tenants with a quota (their leases are planned over
all their subscriptions every tick anyway).
"""
from typing import Collection, Iterable, Mapping

from blackwidow import router
from blackwidow.reload import Plan, unverified
from blackwidow.store.coordination import AssignmentView, SubscriptionView
from shared.states import SubState
from shared.wire import SubscriptionStatus


def scope(carry: frozenset[str] | None, *, routed_over: frozenset[str] | None, live: frozenset[str],
          leased: frozenset[str], written: Iterable[str] | None,
          reported: Mapping[str, frozenset[str] | None],
          moved: frozenset[str] | None = None, banded: Collection[str] = ()) -> frozenset[str] | None:
    """The ids this tick must look at, or None for every one.

    carry: what the last tick left unsettled (None: no last tick to go on: a scheduler's first tick, or one
    after a tick whose writes failed); routed_over: the live node set the last tick routed over; live: this
    tick's, after its failures; leased: tenants with a quota; written: ids the admin API changed since the
    last tick (None: the snapshot was read whole); reported: per node that answered, the ids its report may
    change (`report_changes`; None: unknown); moved: when the node set changed, the ids that may move
    (`node_set_moves`; None: unknown); banded: the ids of the bands paced modulo routing moves over this tick
    (blackwidow.rebalance.BandIndex)."""
    if carry is None or written is None or leased:
        return None
    ids = set(carry)
    ids.update(banded)
    if live != routed_over:
        if moved is None:
            return None
        ids.update(moved)
    ids.update(written)
    for changed in reported.values():
        if changed is None:
            return None
        ids.update(changed)
    return frozenset(ids)


def report_changes(changed: Mapping[str, frozenset[str] | None],
                   statuses: Mapping[str, Mapping[str, SubscriptionStatus]],
                   holdings: Mapping[str, Collection[str]]) -> dict[str, frozenset[str]]:
    """Per answering node (`statuses`: what each answer holds), the ids its report may change: those its delta
    names, or, for a whole report (None or absent in `changed`), every id it names and every id assigned to
    the node (`holdings`): a restarted node lost what it ran, and only its own assignments can miss it."""
    out = {}
    for node, on_node in statuses.items():
        ids = changed.get(node)
        out[node] = ids if ids is not None else frozenset(on_node) | frozenset(holdings.get(node, ()))
    return out


def node_set_moves(*, routing: str, routed_over: frozenset[str] | None, live: frozenset[str],
                   assignments: Mapping[str, AssignmentView], subscriptions: Mapping[str, SubscriptionView],
                   holdings: Mapping[str, Collection[str]],
                   statuses: Mapping[str, Mapping[str, SubscriptionStatus]],
                   paced: bool = False) -> frozenset[str] | None:
    """The ids a change of the live node set from `routed_over` to `live` may move or re-send, or None
    when that is nearly everything (modulo, unpaced) or unknown (no node set routed before).

    Under rendezvous a source moves only to a node that joined and outweighs its holder, or off a node that
    left: every id assigned to a node that left, and every id whose holder a joining node outweighs on its
    route key. Under paced modulo (`paced`: the change pushed a layer, blackwidow.rebalance) only what the
    nodes that left held moves now; the bands come later, each in its tick. Any other routed id not carried
    over from the last tick sits acknowledged on the node that still wins it. Also every id a node reported
    without the spec it runs: a hard reload re-sends those (blackwidow.reload, "unverified")."""
    if routed_over is None or (routing != router.RENDEZVOUS and not paced):
        return None
    left, joined = routed_over - live, live - routed_over
    ids: set[str] = set()
    for node in left:
        ids.update(holdings.get(node, ()))
    if joined and routing == router.RENDEZVOUS:
        held = [(sid, a.node_id, sub.route_key) for sid, a in assignments.items()
                if a.node_id not in left and (sub := subscriptions.get(sid)) is not None]
        takers = router.takeovers([key for _, _, key in held], [node for _, node, _ in held], joined)
        ids.update(sid for (sid, _, _), taker in zip(held, takers) if taker is not None)
    ids.update(sid for on_node in statuses.values() for sid, status in on_node.items() if unverified(status))
    return frozenset(ids)


def unsettled(*, plan: Plan, desired: Mapping[str, str], states: Mapping[str, str],
              assignments: Mapping[str, AssignmentView], answered: Iterable[str],
              silent_holdings: Iterable[str]) -> frozenset[str]:
    """The ids the next tick must look at again whatever it hears.

    plan: this tick's (what it sent, dropped or adopted the next tick confirms, or drops the old copy of a
    move); desired: {id: node} routed this tick; states: the state of each id looked at, after the
    reports (a failed one's re-send comes with time, not with a report); assignments: after the tick (one
    missing, elsewhere than routed, unacknowledged or backing off: again); answered: the nodes that
    answered (what is routed to another got nothing); silent_holdings: what the nodes that did not answer
    last reported or have assigned (`silent_holdings`)."""
    answered = frozenset(answered)
    ids = {p.spec.id for p in plan.puts}
    ids.update(d.subscription_id for d in plan.drops)
    ids.update(a.subscription_id for a in plan.adopts)
    for sid, node in desired.items():
        a = assignments.get(sid)
        if node not in answered or a is None or a.node_id != node or not a.acked or a.failures:
            ids.add(sid)
    ids.update(sid for sid, state in states.items() if state == SubState.FAILED)
    ids.update(silent_holdings)
    return frozenset(ids)


def silent_holdings(silent: Iterable[str], last_reported: Mapping[str, Collection[str]],
                    holdings: Mapping[str, Collection[str]]) -> set[str]:
    """What the nodes that did not answer may hold: what each last reported (a copy there may still need its
    drop) and what is assigned to it (a send it took after its last report, which it may have lost since)."""
    ids: set[str] = set()
    for node in silent:
        ids.update(last_reported.get(node, ()))
        ids.update(holdings.get(node, ()))
    return ids
