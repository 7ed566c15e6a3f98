"""Quota leases on a spawn (docs/quotas.md): a leased subscriber spends only within a valid lease, waits
(with the reason) without one, never spends an expired lease, refuses old generations for good, and
counts the stored history again when another writer got ahead. Sources run one pass at a time by hand;
the clock is injected."""
from dataclasses import replace

from shared.wire import Lease, Poll
from spawn.node import Node
from spawn.registry import Registry
from tests.unit.spawn.fakes import make_revisions
from tests.unit.spawn.test_registry import Harness, spec


def leased(sub_id="a", **kw):
    return replace(spec(sub_id, **kw), leased=True)


def lease(h, sub_id="a", cap=10, gen=1, ttl=15.0):
    h.registry.apply_leases({sub_id: Lease(cap=cap, ttl_s=ttl, gen=gen)})


def test_a_leased_subscriber_waits_for_its_first_lease_and_writes_nothing():
    h = Harness(revisions=50)
    h.registry.upsert(leased())
    h.run()
    st = h.status("a")
    assert (st.state, st.revisions, st.lease) == ("waiting", 0, None)
    assert st.last_error == "waiting for a quota lease from the hub"
    assert h.store.rows == {} and [c for c in h.wiki.calls if c[0] == "revisions"] == []


def test_a_lease_caps_what_is_stored_and_a_larger_one_lets_it_go_on():
    h = Harness(revisions=50, batch=20)
    h.registry.upsert(leased())
    lease(h, cap=15)
    h.run()
    st = h.status("a")
    assert (st.state, st.revisions, len(h.store.rows)) == ("waiting", 15, 15)
    assert st.last_error == "tenant quota lease used up (15 revisions): waiting for the hub to lease more"
    assert (st.lease.gen, st.lease.cap, st.lease.synced) == (1, 15, True)
    lease(h, cap=40, gen=2)
    assert h.status("a").lease.synced is False           # not checked against the store since gen 2
    h.run()
    st = h.status("a")
    assert (st.state, st.revisions, st.last_rev_id, len(h.store.rows)) == ("waiting", 40, 139, 40)
    assert st.lease.synced


def test_a_subscriber_with_headroom_says_when_its_source_has_the_whole_history():
    h = Harness(revisions=30, batch=10)
    h.registry.upsert(leased())
    lease(h, cap=20)
    h.run()
    assert h.status("a").lease.caught_up is False      # stopped at its cap: more is there
    lease(h, cap=100, gen=2)
    h.run()
    st = h.status("a")
    assert (st.state, st.revisions, st.lease.caught_up) == ("running", 30, True)


def test_no_batch_past_the_cap_is_requested():
    h = Harness(revisions=200, batch=10)
    pulled = []
    opening, batches = h.wiki.open_history, h.wiki.revision_batches

    def counting_open(title, **kw):
        first = opening(title, **kw)
        pulled.append(len(first.batch))
        return first

    def counting(page, **kw):
        for batch in batches(page, **kw):
            pulled.append(len(batch))
            yield batch
    h.wiki.open_history, h.wiki.revision_batches = counting_open, counting
    h.registry.upsert(leased())
    lease(h, cap=25)
    h.run()
    assert (h.status("a").revisions, pulled) == (25, [10, 10, 10])     # 3 requests, none ahead of need
    # the next pass starts at the newest stored revision (inclusive): that one is not counted as new
    lease(h, cap=35, gen=2)
    h.run()
    assert (h.status("a").revisions, pulled[3:]) == (35, [10, 10])


def test_an_expired_lease_is_never_spent():
    h = Harness(revisions=50, batch=10)
    h.registry.upsert(leased())
    lease(h, cap=30, ttl=15.0)
    h.clock.advance(15.0)                 # no poll renewed it
    h.run()
    st = h.status("a")
    assert (st.state, st.revisions, h.store.rows) == ("waiting", 0, {})
    assert st.last_error.startswith("quota lease expired 0 s ago") and st.lease.expires_in_s == 0
    lease(h, cap=30, gen=1, ttl=15.0)     # the same generation renews it
    h.run()
    assert h.status("a").revisions == 30


def test_the_lease_in_force_when_the_batch_was_chosen_is_what_is_spent():
    h = Harness(revisions=50, batch=10)
    h.registry.upsert(leased())
    lease(h, cap=25, ttl=15.0)
    src = h.made[0]
    writes = []
    real_write = h.store.write

    def write_then_expire(revisions):
        real_write(revisions)
        writes.append(len(revisions))
        h.clock.advance(8.0)              # the lease runs out while the second batch is written
    h.store.write = write_then_expire
    src.run_once()
    # batches chosen within the lease are counted; none is chosen after it expired
    assert h.status("a").revisions == len(h.store.rows) == sum(writes) == 25 - 5
    assert writes == [10, 10]


def test_a_lower_lease_stops_spending_but_never_lowers_the_count():
    h = Harness(revisions=50, batch=10)
    h.registry.upsert(leased())
    lease(h, cap=30)
    h.run()
    lease(h, cap=10, gen=2)
    st = h.status("a")
    assert (st.revisions, st.lease.cap, st.state) == (30, 10, "waiting")
    h.registry.upsert(leased(quota=20))          # own quota below the count: limit reached, count kept
    assert h.status("a").revisions == 30


def test_older_generations_are_refused_and_removed_subscribers_refuse_theirs_for_good():
    h = Harness(revisions=50)
    h.registry.upsert(leased())
    lease(h, cap=20, gen=3)
    lease(h, cap=50, gen=2)                      # late and older: refused
    assert h.status("a").lease.cap == 20
    h.registry.remove("a")
    h.registry.upsert(leased())                  # re-created: generation 3 belonged to the old one
    lease(h, cap=20, gen=3)
    assert h.status("a").lease is None
    lease(h, cap=5, gen=7, sub_id="b")           # for a subscriber this node does not have
    h.registry.upsert(leased("b"))
    lease(h, cap=5, gen=7, sub_id="b")
    assert h.status("b").lease is None
    lease(h, cap=5, gen=8, sub_id="b")
    assert h.status("b").lease.gen == 8


def test_a_leased_subscriber_created_again_keeps_the_count_it_had_in_this_process():
    h = Harness(revisions=50, batch=10)
    h.registry.upsert(leased())
    lease(h, cap=30)
    h.run()
    h.registry.remove("a")                       # dropped, then sent again (a failed one restarted)
    h.registry.upsert(leased())
    st = h.status("a")
    assert (st.revisions, st.state, st.lease) == (30, "waiting", None)


def test_unleased_specs_ignore_leases():
    h = Harness(revisions=30)
    h.registry.upsert(spec("a"))
    lease(h, cap=5)
    h.run()
    st = h.status("a")
    assert (st.revisions, st.lease) == (30, None)


def test_another_writer_ahead_in_the_store_is_counted_before_going_on():
    h = Harness(revisions=50, batch=10)
    h.registry.upsert(leased())
    lease(h, cap=20)
    h.run()
    # another node stored revisions 20..34 meanwhile (a move in progress)
    h.store.write(make_revisions(50)[20:35])
    lease(h, cap=40, gen=2)
    h.run()
    st = h.status("a")
    assert (st.revisions, st.last_rev_id, len(h.store.rows)) == (40, 139, 40)
    assert st.lease.synced


def test_a_poll_carries_leases_to_the_registry_and_detach_refuses_them_afterwards():
    h = Harness(revisions=50)
    node = Node(h.registry, hub=None, advertise_url="http://127.0.0.1:8799", detach_after_s=15.0, clock=h.clock)
    h.registry.upsert(leased())
    report = node.heartbeat(Poll(node_id=node.node_id, assigned=("a",), leases={"a": Lease(10, 15.0, 4)}))
    assert report.subscriptions[0].lease.gen == 4
    node.detach()
    h.registry.upsert(leased())
    node.heartbeat(Poll(node_id=node.node_id, assigned=("a",), leases={"a": Lease(10, 15.0, 4)}))
    assert h.status("a").lease is None


def test_a_lease_that_arrives_late_keeps_its_deadline_in_hub_time():
    h = Harness(revisions=50, batch=10)
    wall = [1_000.0]
    h.registry = Registry(h.make, orphan_after_s=20.0, clock=h.clock, wall_clock=lambda: wall[0], clock_skew_s=0.5)
    h.registry.upsert(leased())
    # granted at hub time 988 for 15 s, delivered 12 s late: 2.5 s left on this node, not 15
    h.registry.apply_leases({"a": Lease(cap=10, ttl_s=15.0, gen=1, expires_at=1_003.0)})
    assert h.status("a").lease.expires_in_s == 2.5
    h.clock.advance(2.5)
    h.run()
    st = h.status("a")
    assert (st.state, st.revisions) == ("waiting", 0) and st.last_error.startswith("quota lease expired")
