"""Fencing on PostgreSQL: the leader's lock connection is cut in the middle of a tick, another scheduler takes
over, and the deposed leader writes nothing and sends nothing (docs/coordination.md, "Exactly one scheduler")."""
import threading

import pytest
import sqlalchemy as sa

from blackwidow import fencing
from blackwidow.db import make_sessionmaker
from blackwidow.leadership import AdvisoryLock
from blackwidow.models import Assignment, Node, Reload, SchedulerEpoch
from blackwidow.poller import PollerState, poll_once, utcnow
from tests.integration.coordination_support import (  # noqa: F401
    add_subscriptions, client, db_url, hub_config, maker, register, spawns, subscriptions)

pytestmark = pytest.mark.integration


def rows(maker) -> dict:
    with maker.begin() as session:
        return {
            "assignments": sorted(tuple(r) for r in session.execute(
                sa.select(Assignment.subscription_id, Assignment.node_id, Assignment.acked))),
            "reloads": session.scalar(sa.select(sa.func.count()).select_from(Reload)),
            "nodes": sorted(tuple(r) for r in session.execute(
                sa.select(Node.id, Node.last_seen, Node.consecutive_failures))),
            "epoch": session.scalar(sa.select(SchedulerEpoch.epoch)),
        }


def test_a_leader_deposed_mid_tick_writes_and_sends_nothing(maker, spawns, client, db_url):
    (node,) = spawns(1)
    register(maker, [node])
    add_subscriptions(maker, 5)
    config = hub_config(db_url)

    lock_a = AdvisoryLock(maker.kw["bind"])
    assert lock_a.try_acquire()
    leader = PollerState()
    poll_once(maker, client, config, state=leader)             # A leads: epoch 1, everything placed
    assert leader.fence is not None and len(node.subs) == 5
    add_subscriptions(maker, 3, prefix="Later")                 # A's next tick would send these
    node.reset_counts()

    # A's next tick blocks in its poll; meanwhile its lock connection dies and B takes over
    in_poll, go_on = threading.Event(), threading.Event()
    report = node.report

    def slow_report():
        in_poll.set()
        go_on.wait(10)
        return report()

    node.report = slow_report
    outcome: dict = {}

    def tick_a():
        try:
            outcome["result"] = poll_once(maker, client, config, state=leader)
        except Exception as exc:        # what the scheduler would see
            outcome["error"] = exc

    thread = threading.Thread(target=tick_a)
    thread.start()
    assert in_poll.wait(10)
    with maker.begin() as session:
        pid = lock_a._conn.execute(sa.text("SELECT pg_backend_pid()")).scalar()
        session.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    assert not lock_a.still_held()
    maker_b = make_sessionmaker(db_url)
    lock_b = AdvisoryLock(maker_b.kw["bind"])
    assert lock_b.try_acquire()                                 # the lock was freed with the connection
    with maker_b.begin() as session:
        successor = fencing.claim(session, "scheduler-b", utcnow())
    assert successor.epoch == leader.fence.epoch + 1
    before = rows(maker)

    go_on.set()
    thread.join(20)
    assert isinstance(outcome.get("error"), fencing.LeadershipLost), outcome
    assert node.sent() == 0                                     # no puts, no drops after the takeover
    assert rows(maker) == before                                # nor a row written
    assert {s.state for s in subscriptions(maker).values() if s.node_id is None} == {"pending"}

    # the successor carries on where A left off
    node.report = report
    result = poll_once(maker_b, client, config, state=PollerState(fence=successor))
    assert result.sent == 3 and len(node.subs) == 8
    lock_b.release()
    maker_b.kw["bind"].dispose()


def test_a_deposed_leader_cannot_write_after_the_successor_claimed(maker, spawns, client, db_url):
    (node,) = spawns(1)
    register(maker, [node])
    add_subscriptions(maker, 2)
    config = hub_config(db_url)
    old = PollerState()
    poll_once(maker, client, config, state=old)
    with maker.begin() as session:
        fencing.claim(session, "successor", utcnow())
    node.reset_counts()
    with pytest.raises(fencing.LeadershipLost):
        poll_once(maker, client, config, state=old)
    assert node.count("POST") == 0                              # it stopped before polling anyone
