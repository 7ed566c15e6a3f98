"""Which subscriptions a tick must look at, pure (docs/coordination.md, "Steady ticks").

A tick's rules (blackwidow.decide) are a function of the snapshot and the nodes' reports. Between two ticks
on the same live node set almost nothing changes: a few subscriptions written by the admin API, a few
statuses a spawn reports as changed (its report is a delta since the last one the hub received), and the
subscriptions the last tick left unsettled (a send not yet acknowledged, a copy to drop once its new node
has it, a failed one waiting for its re-send). Every other subscription would get the same routing, no
action and no change to its row, so a tick looks only at

    scope = changed by the admin API | changed in a report | carried over from the last tick

and a million subscriptions cost what the few that changed cost. Whatever cannot be proven unchanged makes
the tick look at everything (`scope` returns None): a scheduler's first tick or a snapshot read again
whole, a change of the live node set (a hard reload moves nearly everything anyway), a node that answered
with a whole report (it restarted, or the hub lost its last one), and tenants with a quota (their leases
are planned over all their subscriptions every tick anyway).
"""
from typing import Iterable, Mapping

from blackwidow.reload import Plan
from blackwidow.store.coordination import AssignmentView
from shared.states import SubState


def scope(carry: frozenset[str] | None, *, routed_over: frozenset[str] | None, live: frozenset[str],
          leased: frozenset[str], written: Iterable[str] | None,
          reported: Mapping[str, frozenset[str] | None]) -> frozenset[str] | None:
    """The ids this tick must look at, or None for every one.

    carry: what the last tick left unsettled (None: no last tick to go on: a scheduler's first tick, or one
    after a tick whose writes failed); routed_over: the live node set the last tick routed over; live: this
    tick's, after its failures; leased: tenants with a quota; written: ids the admin API changed since the
    last tick (None: the snapshot was read whole); reported: per node that answered, the ids its report says
    changed (None: a whole report)."""
    if carry is None or written is None or live != routed_over or leased:
        return None
    ids = set(carry)
    ids.update(written)
    for changed in reported.values():
        if changed is None:
            return None
        ids.update(changed)
    return frozenset(ids)


def unsettled(*, plan: Plan, desired: Mapping[str, tuple], states: Mapping[str, str],
              assignments: Mapping[str, AssignmentView], answered: Iterable[str],
              silent_holdings: Iterable[str]) -> frozenset[str]:
    """The ids the next tick must look at again whatever it hears.

    plan: this tick's (what it sent, dropped or adopted the next tick confirms, or drops the old copy of a
    move); desired: {id: (node, spec)} routed this tick; states: the state of each id looked at, after the
    reports (a failed one's re-send comes with time, not with a report); assignments: after the tick (one
    missing, elsewhere than routed, unacknowledged or backing off: again); answered: the nodes that
    answered (what is routed to another got nothing); silent_holdings: what the nodes that did not answer
    last reported (a copy there may still need its drop)."""
    answered = frozenset(answered)
    ids = {p.spec.id for p in plan.puts}
    ids.update(d.subscription_id for d in plan.drops)
    ids.update(a.subscription_id for a in plan.adopts)
    for sid, (node, _) in desired.items():
        a = assignments.get(sid)
        if node not in answered or a is None or a.node_id != node or not a.acked or a.failures:
            ids.add(sid)
    ids.update(sid for sid, state in states.items() if state == SubState.FAILED)
    ids.update(silent_holdings)
    return frozenset(ids)
