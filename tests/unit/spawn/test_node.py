"""Attach/detach lifecycle with an injected clock: no threads, no servers."""
from shared.wire import Poll, RegistrationAck
from spawn.host_limiter import Backoff
from spawn.hub_client import HubUnreachable
from spawn.node import Node
from tests.unit.spawn.test_registry import Harness, spec


class FakeHub:
    hub_url = "http://hub.test"

    def __init__(self, fail=0):
        self.fail = fail
        self.calls = 0

    def register(self, url):
        self.calls += 1
        if self.calls <= self.fail:
            raise HubUnreachable("connection refused")
        return RegistrationAck(id="node-1", poll_interval_s=2.0, detach_after_s=15.0, orphan_after_s=20.0)


def make_node(hub=None, wait=None):
    h = Harness()
    node = Node(h.registry, hub or FakeHub(), advertise_url="http://127.0.0.1:9999", detach_after_s=15.0,
                backoff=Backoff(base_s=1.0, cap_s=8.0, rand=lambda: 1.0), clock=h.clock, wait=wait)
    return h, node


def test_registration_applies_the_hubs_timings_and_arms_the_watchdog():
    h, node = make_node()
    node.register_once()
    assert node.attached and node.node_id == "node-1" and node.watchdog.armed
    assert h.registry.orphan_after_s == 20.0 and node.poll_interval_s == 2.0


def test_hub_silence_detaches_drops_everything_and_asks_to_register_again():
    h, node = make_node()
    node.register_once()
    node.put(spec("a"))
    boot = node.boot_id
    h.clock.advance(10)
    node.heartbeat(Poll(node_id="node-1", assigned=("a",)))
    h.clock.advance(14)
    assert not node.watchdog.check()              # 14 s of silence < 15 s
    h.clock.advance(2)
    assert node.watchdog.check()
    assert not node.attached and node.boot_id != boot
    assert h.registry.snapshot() == [] and all(s.stopped for s in h.made)
    assert node.registration_pending
    assert not node.watchdog.check()              # fires once, then disarmed until the hub is back
    node.register_once()
    assert node.attached and not node.registration_pending


def test_a_fresh_node_never_detaches_before_first_contact():
    h, node = make_node()
    h.clock.advance(1000)
    assert not node.watchdog.check()


def test_any_hub_call_is_a_heartbeat():
    h, node = make_node()
    node.register_once()
    for call in (lambda: node.put(spec("a")), lambda: node.delete("a"), lambda: node.heartbeat()):
        h.clock.advance(14)
        call()
    h.clock.advance(14)
    assert not node.watchdog.check() and node.attached


def test_registration_retries_with_growing_backoff_until_the_hub_answers():
    hub = FakeHub(fail=4)
    waits = []
    h, node = make_node(hub, wait=lambda d: waits.append(d) or False)
    assert node.register_until_answered()
    assert hub.calls == 5 and node.attached
    assert waits == [1.0, 2.0, 4.0, 8.0]


def test_status_report_and_health_carry_the_load_figures():
    h, node = make_node()
    node.register_once()
    node.put(spec("a"))
    node.put(spec("b"))
    report = node.heartbeat()
    assert report.attached and report.sources == 1 and {s.id for s in report.subscriptions} == {"a", "b"}
    health = node.health()
    assert health["attached"] and health["subscribers"] == 2 and health["sources"] == 1
    assert health["load"] == 3
    assert node.metrics.registry.get_sample_value("bw_spawn_load") == 3


def test_keepalives_between_polls_keep_the_node_attached_and_its_named_subscriptions():
    h, node = make_node()
    node.register_once()
    node.put(spec("a"))
    node.put(spec("b"))
    node.heartbeat(Poll(node_id="node-1", assigned=("a",)))     # the hub's last poll named only "a"
    for _ in range(6):                                           # a 60 s tick: keepalives every 10 s
        h.clock.advance(10)
        assert not node.watchdog.check()
        assert node.keepalive() == {"node_id": "node-1", "boot_id": node.boot_id, "attached": True}
    assert not node.detached
    # "a" stays named; "b", never named by a poll, is an orphan after orphan_after_s like without keepalives
    assert [s.id for s in h.registry.snapshot()] == ["a"]


def test_a_subscription_put_during_a_long_tick_stays_named_by_keepalives_until_the_next_list():
    h, node = make_node()
    node.register_once()
    node.put(spec("a"))
    node.heartbeat(Poll(node_id="node-1", assigned=("a",)))     # the tick's poll, before its sends
    node.put(spec("b"))                                          # the same tick places "b" here
    for _ in range(6):                                           # the tick lasts 60 s: keepalives every 10 s
        h.clock.advance(10)
        node.keepalive()
    assert [s.id for s in h.registry.snapshot()] == ["a", "b"]
    node.heartbeat(Poll(node_id="node-1", assigned=("a",)))     # the next list no longer names "b"
    h.clock.advance(h.registry.orphan_after_s + 1)
    node.keepalive()
    assert [s.id for s in h.registry.snapshot()] == ["a"]


def test_a_poll_naming_the_last_report_gets_only_what_changed():
    from shared.wire import ReportPage
    h, node = make_node()
    node.register_once()
    for sub_id in ("a", "b", "c"):
        node.put(spec(sub_id))
    poll = Poll(node_id="node-1", assigned=("a", "b", "c"), report=ReportPage(None, 2))
    first = node.heartbeat(poll)
    rest = node.heartbeat(Poll(node_id="node-1", assigned=("a", "b", "c"), report=ReportPage(first.next, 2)))
    assert (first.delta, [s.id for s in first.subscriptions + rest.subscriptions]) == (False, ["a", "b", "c"])
    assert rest.token == first.token                     # the poll's pages are one report
    steady = node.heartbeat(Poll(node_id="node-1", assigned=("a", "b", "c"),
                                 report=ReportPage(None, 2, since=first.token)))
    assert (steady.delta, steady.subscriptions, steady.removed, steady.next) == (True, (), (), None)
    node.delete("b")
    node.put(spec("d"))
    changed = node.heartbeat(Poll(node_id="node-1", assigned=("a", "c", "d"),
                                  report=ReportPage(None, 2, since=steady.token)))
    assert ([s.id for s in changed.subscriptions], changed.removed) == (["d"], ("b",))
    # a hub that lost that answer names the one before: it gets everything
    again = node.heartbeat(Poll(node_id="node-1", assigned=("a", "c", "d"),
                                report=ReportPage(None, 5, since=steady.token)))
    assert (again.delta, [s.id for s in again.subscriptions]) == (False, ["a", "c", "d"])
    # a detach starts over: tokens of the old boot name nothing
    node.detach()
    node.register_once()
    fresh = node.heartbeat(Poll(node_id="node-1", assigned=(), report=ReportPage(None, 5, since=again.token)))
    assert (fresh.delta, fresh.subscriptions) == (False, ())
