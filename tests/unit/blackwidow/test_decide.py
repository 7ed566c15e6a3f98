"""The tick's rules as tables: blackwidow.decide.decide and settle, with no database and no HTTP."""
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from blackwidow import reload
from blackwidow.decide import (Polled, Rules, decide, failed_resend_due, failed_retry_delay, settle,
                               status_changes)
from blackwidow.quota.arithmetic import Params
from blackwidow.quota.leasing import LeaseRound, QuotaMemory
from blackwidow.quota.store import LeaseSnapshot, TenantQuota
from blackwidow.sends import Outcome
from blackwidow.store.coordination import AssignmentView, NodeView, Snapshot, SubscriptionView
from shared.wire import StatusReport, SubscriptionSpec, SubscriptionStatus

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
RULES = Rules(node_failures=3, routing="modulo")
WIKI = "https://en.wikipedia.org/w/api.php"


def spec(sid: str, tenant: str = "t1", quota: int | None = None) -> SubscriptionSpec:
    return SubscriptionSpec(id=sid, source_uuid=f"src-{sid}", tenant_id=tenant, wiki=WIKI, title=f"T {sid}",
                            quota=quota)


def sub(sid: str, *, state: str = "running", node: str | None = "A", revisions: int = 0, enabled: bool = True,
        tenant: str = "t1", quota: int | None = None) -> SubscriptionView:
    return SubscriptionView(sid, spec(sid, tenant, quota), enabled, state, node, revisions, None, None)


def node(nid: str, failures: int = 0, state: str = "live") -> NodeView:
    return NodeView(nid, f"http://{nid}", state, failures, "boot")


def status(sid: str, state: str = "running", revisions: int = 0, tenant: str = "t1") -> SubscriptionStatus:
    return SubscriptionStatus(id=sid, state=state, revisions=revisions, spec=spec(sid, tenant).to_dict())


def report(nid: str, *items: SubscriptionStatus) -> StatusReport:
    return StatusReport(node_id=nid, boot_id="boot", attached=True, subscriptions=items)


def leases(tenants: dict[str, int | None] | None = None) -> LeaseRound:
    quotas = {t: TenantQuota(t, q, 0, None) for t, q in (tenants or {}).items()}
    return LeaseRound(LeaseSnapshot(quotas, {}, frozenset()), {}, frozenset(), {}, {},
                      Params(ttl_s=15, margin_s=10, settle_s=60, horizon_s=6), NOW.timestamp())


def snapshot(nodes, subs, assignments=None) -> Snapshot:
    return Snapshot({n.id: n for n in nodes}, {s.id: s for s in subs},
                    assignments if assignments is not None else
                    {s.id: AssignmentView(s.node_id, True, NOW) for s in subs if s.node_id})


def run(snap, polled, lease_round=None, previous=None):
    return decide(snap, polled, lease_round or leases(), RULES, NOW, previous_live=previous, memory=QuotaMemory())


# (name, snapshot, polled, expected dead nodes, expected live, hard?)
LIVENESS = [
    ("an answer keeps a node live", [node("A")], Polled({"A": report("A")}), (), {"A"}, False),
    ("a failure below the limit is counted, not fatal", [node("A", failures=1)], Polled({}, frozenset({"A"})),
     (), {"A"}, False),
    ("the third consecutive failure marks it dead: a hard reload", [node("A"), node("B", failures=2)],
     Polled({"A": report("A")}, frozenset({"B"})), ("B",), {"A"}, True),
    ("dead nodes are not polled and stay out", [node("A"), node("B", state="dead")], Polled({"A": report("A")}),
     (), {"A"}, False),
]


@pytest.mark.parametrize("name,nodes,polled,dead,live,hard", LIVENESS, ids=[c[0] for c in LIVENESS])
def test_liveness(name, nodes, polled, dead, live, hard):
    snap = snapshot(nodes, [])
    decision = run(snap, polled, previous=frozenset(n.id for n in nodes if n.state == "live"))
    assert decision.nodes.dead == dead and decision.live == live and decision.hard is hard


# (name, subscriptions, reports, expected status columns per subscription)
STATUS = [
    ("state and counters come from the assigned node",
     [sub("s1", state="assigned", revisions=3)], {"A": report("A", status("s1", "running", 7))},
     {"s1": {"state": "running", "revisions": 7}}),
    ("counters never go back", [sub("s1", revisions=9)], {"A": report("A", status("s1", "running", 4))}, {}),
    ("a report that says what the row holds changes nothing", [sub("s1", revisions=4)],
     {"A": report("A", status("s1", "running", 4))}, {}),
    ("a copy on another node does not overwrite them", [sub("s1", revisions=3)],
     {"A": report("A"), "B": report("B", status("s1", "failed", 50))}, {}),
    ("a state this version does not know is not copied, the counters are",
     [sub("s1", state="running", revisions=1)], {"A": report("A", status("s1", "hibernating", 5))},
     {"s1": {"revisions": 5}}),
    ("a deleted page is reported as such, and only what changed", [sub("s1", revisions=4)],
     {"A": report("A", status("s1", "deleted", 4))}, {"s1": {"state": "deleted"}}),
    ("a disabled subscription takes nothing from a report", [sub("s1", enabled=False)],
     {"A": report("A", status("s1", "running", 5))}, {}),
]


@pytest.mark.parametrize("name,subs,reports,expected", STATUS, ids=[c[0] for c in STATUS])
def test_reported_status(name, subs, reports, expected):
    decision = run(snapshot([node("A"), node("B")], subs), Polled(reports))
    assert decision.status == expected


def test_a_tenant_whose_quota_is_used_up_shows_limit_reached_and_stays_placed():
    subs = [sub("s1", revisions=60), sub("s2", revisions=40), sub("s3", tenant="t2", revisions=5)]
    snap = snapshot([node("A")], subs)
    reports = {"A": report("A", *(status(s.id, "running", s.revisions, s.spec.tenant_id) for s in subs))}
    decision = run(snap, Polled(reports), leases({"t1": 100, "t2": 10}))
    assert decision.used_up == {"t1": "tenant quota used up: 100 of 100 revisions"}
    assert set(decision.desired) == {"s1", "s2", "s3"}            # placement is kept for the lease accounting
    settled = settle(snap, decision, [], NOW, RULES)
    assert {sid: c.get("state") for sid, c in settled.subscriptions.items()} == \
        {"s1": "limit_reached", "s2": "limit_reached"}


def test_own_quota_reached_is_taken_off_its_node():
    snap = snapshot([node("A")], [sub("s1", quota=5, revisions=5, state="limit_reached")])
    decision = run(snap, Polled({"A": report("A", status("s1", "limit_reached", 5))}))
    assert decision.desired == {} and [(d.subscription_id, d.reason) for d in decision.plan.drops] == [("s1", "stale")]


# (name, assignment, now offset s, due?)
RESEND = [
    ("never sent", None, 0, True),
    ("just sent", AssignmentView("A", True, NOW), 10, False),
    ("sent a base interval ago", AssignmentView("A", True, NOW), 31, True),
    ("backing off after re-sends", AssignmentView("A", True, NOW, 2, NOW + timedelta(seconds=120)), 119, False),
    ("backoff over", AssignmentView("A", True, NOW, 2, NOW + timedelta(seconds=120)), 120, True),
]


@pytest.mark.parametrize("name,assignment,offset,due", RESEND, ids=[c[0] for c in RESEND])
def test_failed_resend_due(name, assignment, offset, due):
    assert failed_resend_due(assignment, NOW + timedelta(seconds=offset), RULES) is due


def test_failed_retry_delay_doubles_up_to_its_cap():
    assert [failed_retry_delay(n, RULES) for n in (1, 2, 3, 4, 10)] == [60, 120, 240, 480, 3600]


def test_a_failed_resend_records_its_backoff_and_a_recovery_resets_it():
    snap = snapshot([node("A")], [sub("s1", state="failed")],
                    {"s1": AssignmentView("A", True, NOW - timedelta(seconds=60))})
    decision = run(snap, Polled({"A": report("A", status("s1", "failed"))}))
    put = next(p for p in decision.plan.puts if p.reason == "failed")
    drop = next(d for d in decision.plan.drops if d.reason == "failed")
    settled = settle(snap, decision, [Outcome(drop, True), Outcome(put, True, "assigned")], NOW, RULES)
    row = settled.assignments["s1"]
    assert (row.failures, row.retry_at) == (1, NOW + timedelta(seconds=60))

    again = snapshot([node("A")], [sub("s1", state="assigned")], {"s1": row})
    recovered = settle(again, run(again, Polled({"A": report("A", status("s1", "running"))})), [], NOW, RULES)
    assert (recovered.assignments["s1"].failures, recovered.assignments["s1"].retry_at) == (0, None)


def test_a_deleted_page_stays_placed_shows_deleted_and_ends_a_failure_backoff():
    snap = snapshot([node("A")], [sub("s1", state="failed")],
                    {"s1": AssignmentView("A", True, NOW - timedelta(seconds=600), 3, NOW - timedelta(seconds=1))})
    decision = run(snap, Polled({"A": report("A", status("s1", "deleted"))}))
    assert set(decision.desired) == {"s1"} and decision.plan.puts == () and decision.plan.drops == ()
    settled = settle(snap, decision, [], NOW, RULES)
    assert settled.subscriptions["s1"]["state"] == "deleted"
    assert (settled.assignments["s1"].failures, settled.assignments["s1"].retry_at) == (0, None)


def test_a_move_keeps_the_old_copy_until_the_new_node_has_it():
    # s1 routes to B once B exists (modulo over [A, B]); find one that does
    subs = [sub(f"s{i}") for i in range(8)]
    snap = snapshot([node("A"), node("B")], subs)
    reports = {"A": report("A", *(status(s.id) for s in subs)), "B": report("B")}
    decision = run(snap, Polled(reports), previous=frozenset({"A"}))
    moving = sorted(sid for sid, n in decision.desired.items() if n == "B")
    assert moving and decision.hard
    assert sorted(p.spec.id for p in decision.plan.puts) == moving and decision.plan.drops == ()
    outcomes = [Outcome(p, True, "assigned") for p in decision.plan.puts]
    settled = settle(snap, decision, outcomes, NOW, RULES)
    assert {sid: a.node_id for sid, a in settled.assignments.items()} == {sid: "B" for sid in moving}

    after = snapshot([node("A"), node("B")], subs, {**snap.assignments, **settled.assignments})
    both = {"A": report("A", *(status(s.id) for s in subs)), "B": report("B", *(status(sid) for sid in moving))}
    next_tick = run(after, Polled(both), previous=frozenset({"A", "B"}))
    assert sorted((d.node_id, d.subscription_id, d.reason) for d in next_tick.plan.drops) == \
        [("A", sid, "moved") for sid in moving]
    assert next_tick.plan.puts == ()


def test_rejected_report_items_are_kept_for_the_log_and_the_poll_stands():
    bad = StatusReport(node_id="A", boot_id="boot", attached=True, subscriptions=(status("s1"),),
                       rejected=("subscriptions[1]: 'id' is required",))
    decision = run(snapshot([node("A")], [sub("s1")]), Polled({"A": bad}))
    assert decision.rejected == {"A": bad.rejected} and decision.live == {"A"} and decision.nodes.dead == ()


def test_reload_record_names_the_change():
    snap = snapshot([node("A")], [sub("s1", node=None, state="pending")], {})
    decision = run(snap, Polled({"A": report("A")}))
    settled = settle(snap, decision, [Outcome(p, True, "assigned") for p in decision.plan.puts], NOW, RULES)
    assert settled.reload == ("soft", "new=1", 1, 0)
    assert settled.subscriptions["s1"] == {"node_id": "A", "state": "assigned"}
    assert isinstance(decision.plan.puts[0], reload.Put)


# (name, stored `complete`, reported `complete`, the row's value after the tick)
COMPLETE = [
    ("proven by its spawn", None, True, True),
    ("found to differ", True, False, False),
    ("a restarted or older spawn that has not checked keeps what was proven", True, None, True),
    ("unknown stays unknown", None, None, None),
]


@pytest.mark.parametrize("name,stored,reported,shown", COMPLETE, ids=[c[0] for c in COMPLETE])
def test_the_hub_copies_whether_the_stored_history_is_complete(name, stored, reported, shown):
    snap = snapshot([node("A")], [replace(sub("s1"), complete=stored)])
    reports = {"A": report("A", replace(status("s1"), complete=reported))}
    assert status_changes(snap, reports).get("s1", {}).get("complete", stored) is shown
