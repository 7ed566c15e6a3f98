import pytest

from blackwidow.reload import HARD, SOFT, Adopt, Drop, Put, plan
from shared.wire import SubscriptionSpec, SubscriptionStatus


def spec(sub_id: str, quota: int | None = None) -> SubscriptionSpec:
    return SubscriptionSpec(id=sub_id, source_uuid=f"src-{sub_id}", tenant_id="t1",
                            wiki="https://en.wikipedia.org/w/api.php", title=f"Title {sub_id}", quota=quota)


def running(sub_id: str, state: str = "running", quota: int | None = None, with_spec: bool = True):
    return SubscriptionStatus(id=sub_id, state=state,
                              spec=spec(sub_id, quota).to_dict() if with_spec else None)


def planned(desired: dict, *args):
    """plan() over a table's {id: (node, spec)}."""
    return plan({sid: node for sid, (node, _) in desired.items()},
                {sid: spec for sid, (_, spec) in desired.items()}, *args)


CASES = [
    # (name, desired, reported, acked, node_set_changed, retry_failed, expected kind, puts, drops, adopts)
    ("nothing to do", {"s1": ("A", spec("s1"))}, {"A": {"s1": running("s1")}}, {"s1": "A"}, False, None,
     None, [], [], []),
    ("new subscription", {"s1": ("A", spec("s1"))}, {"A": {}}, {}, False, None,
     SOFT, [("A", "s1", "new")], [], []),
    ("node lost it (restart)", {"s1": ("A", spec("s1"))}, {"A": {}}, {"s1": "A"}, False, None,
     SOFT, [("A", "s1", "missing")], [], []),
    ("quota changed: update in place", {"s1": ("A", spec("s1", quota=5))}, {"A": {"s1": running("s1")}},
     {"s1": "A"}, False, None, SOFT, [("A", "s1", "changed")], [], []),
    ("unparseable reported spec is replaced", {"s1": ("A", spec("s1"))},
     {"A": {"s1": SubscriptionStatus(id="s1", state="running", spec={"id": "s1"})}}, {"s1": "A"}, False, None,
     SOFT, [("A", "s1", "changed")], [], []),
    ("removed subscription dropped", {}, {"A": {"s1": running("s1")}}, {"s1": "A"}, False, None,
     SOFT, [], [("A", "s1", "stale")], []),
    ("quota hit: limit_reached is not desired any more", {}, {"A": {"s1": running("s1", "limit_reached")}},
     {"s1": "A"}, False, None, SOFT, [], [("A", "s1", "stale")], []),
    ("failed re-sent: dropped then put", {"s1": ("A", spec("s1"))}, {"A": {"s1": running("s1", "failed")}},
     {"s1": "A"}, False, None, SOFT, [("A", "s1", "failed")], [("A", "s1", "failed")], []),
    ("failed not yet due for a retry", {"s1": ("A", spec("s1"))}, {"A": {"s1": running("s1", "failed")}},
     {"s1": "A"}, False, set(), None, [], [], []),
    ("failed and changed is sent even when no retry is due", {"s1": ("A", spec("s1", quota=9))},
     {"A": {"s1": running("s1", "failed")}}, {"s1": "A"}, False, set(), SOFT, [("A", "s1", "changed")], [], []),
    ("deleted page: left on its node, never re-sent as a failure", {"s1": ("A", spec("s1"))},
     {"A": {"s1": running("s1", "deleted")}}, {"s1": "A"}, False, None, None, [], [], []),
    ("deleted page after a hub restart: adopted", {"s1": ("A", spec("s1"))},
     {"A": {"s1": running("s1", "deleted")}}, {}, False, None, None, [], [], [("A", "s1")]),
    ("hub restart: running with equal spec is adopted", {"s1": ("A", spec("s1"))}, {"A": {"s1": running("s1")}},
     {}, False, None, None, [], [], [("A", "s1")]),
    ("lost ack: node runs it, adopt instead of re-sending", {"s1": ("A", spec("s1"))},
     {"A": {"s1": running("s1", "assigned")}}, {}, True, None, HARD, [], [], [("A", "s1")]),
    ("no spec reported, acked: trusted on soft", {"s1": ("A", spec("s1"))},
     {"A": {"s1": running("s1", with_spec=False)}}, {"s1": "A"}, False, None, None, [], [], []),
    ("no spec reported, not acked: re-sent", {"s1": ("A", spec("s1"))},
     {"A": {"s1": running("s1", with_spec=False)}}, {}, False, None, SOFT, [("A", "s1", "unacked")], [], []),
    ("no spec reported: re-sent on hard", {"s1": ("A", spec("s1"))},
     {"A": {"s1": running("s1", with_spec=False)}}, {"s1": "A"}, True, None, HARD, [("A", "s1", "unverified")], [],
     []),
    ("node died: moved to a live node, nothing sent to the dead one", {"s1": ("B", spec("s1"))}, {"B": {}},
     {"s1": "A"}, True, None, HARD, [("B", "s1", "moved")], [], []),
    ("node joined: put on the new node, the old copy stays until it is acknowledged there",
     {"s1": ("B", spec("s1")), "s2": ("A", spec("s2"))},
     {"A": {"s1": running("s1"), "s2": running("s2")}, "B": {}}, {"s1": "A", "s2": "A"}, True, None,
     HARD, [("B", "s1", "moved")], [], []),
    ("moved and acknowledged on the new node: the old copy is dropped",
     {"s1": ("B", spec("s1"))}, {"A": {"s1": running("s1")}, "B": {"s1": running("s1")}}, {"s1": "B"}, False,
     None, SOFT, [], [("A", "s1", "moved")], []),
    ("moved, the new node reports it before our ack was recorded: adopted there, dropped from the old",
     {"s1": ("B", spec("s1"))}, {"A": {"s1": running("s1")}, "B": {"s1": running("s1")}}, {"s1": "A"}, False,
     None, SOFT, [], [("A", "s1", "moved")], [("B", "s1")]),
    ("node set changed with nothing to move is still hard", {"s1": ("A", spec("s1"))},
     {"A": {"s1": running("s1")}, "B": {}}, {"s1": "A"}, True, None, HARD, [], [], []),
    ("unreachable node: no sends and no drops there", {"s1": ("A", spec("s1")), "s2": ("B", spec("s2"))},
     {"B": {"s2": running("s2"), "s9": running("s9")}}, {}, False, None,
     SOFT, [], [("B", "s9", "stale")], [("B", "s2")]),
]


@pytest.mark.parametrize("name,desired,reported,acked,changed,retry,kind,puts,drops,adopts", CASES,
                         ids=[c[0] for c in CASES])
def test_plan(name, desired, reported, acked, changed, retry, kind, puts, drops, adopts):
    result = planned(desired, reported, acked, changed, retry)
    assert result.kind == kind
    assert [(p.node_id, p.spec.id, p.reason) for p in result.puts] == puts
    assert [(d.node_id, d.subscription_id, d.reason) for d in result.drops] == drops
    assert [(a.node_id, a.subscription_id) for a in result.adopts] == adopts


def test_puts_carry_the_desired_spec_and_reasons_are_counted():
    desired = {"s1": ("A", spec("s1", quota=3)), "s2": ("A", spec("s2"))}
    result = planned(desired, {"A": {"s1": running("s1"), "s3": running("s3")}}, {"s1": "A"}, False)
    assert result.puts == (Put("A", spec("s1", quota=3), "changed"), Put("A", spec("s2"), "new"))
    assert result.drops == (Drop("A", "s3", "stale"),)
    assert result.reasons == {"changed": 1, "new": 1, "stale": 1}
    assert result.adopts == ()
    assert Adopt("A", "s1") not in result.adopts
