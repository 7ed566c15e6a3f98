"""Budget rounds between ticks (blackwidow.budget_rounds) on the hub's database: a slot held by a node with only
backfill goes to a node that just got freshness work within a few rounds, not a few ticks; the holds written stay
safe; rounds stop when nobody has anything to say and never run past their deadline. The nodes are a SpawnClient
stand-in that answers with the use the test sets and gives a slot back when asked with nothing fresh waiting,
as spawn.upstream_budget does."""
import time
from dataclasses import replace

import pytest
import sqlalchemy as sa

from blackwidow import budget_rounds, poller
from blackwidow.models import IdentityWindow, Node
from blackwidow.spawn_client import SpawnUnreachable
from blackwidow.store.nodes import register_node
from blackwidow.upstream.limits import binding_rate, default_limits
from blackwidow.upstream.slots import Hold, violations
from shared.budget_wire import BudgetRoundAck
from shared.wire import Budget, IdentityUse, SendBatchAck, StatusReport
from tests.fixtures.hub import hub_config

HOST = "wiki.example.org"
URLS = {"http://127.0.0.1:9001": "a", "http://127.0.0.1:9002": "b"}


class Nodes:
    """Each node keeps the newest Budget it was sent and answers with the use the test set; asked to give back
    with no freshness work of its own, it does at once (nothing in flight)."""

    def __init__(self, ids: dict[str, str], when=lambda: 0.0):
        self.ids, self.when = ids, when
        self.uses: dict[str, IdentityUse] = {}
        self.budgets: dict[str, Budget] = {}
        self.rounds: list[tuple[float, str, dict[str, Budget]]] = []      # (round's time, node, budgets)
        self.clock_off: dict[str, float] = {}           # node -> how far its wall clock is ahead of the hub's

    def _apply(self, node: str, budgets) -> dict[str, IdentityUse]:
        new = budgets.get(HOST)
        if new is not None and (node not in self.budgets or new.gen >= self.budgets[node].gen):
            self.budgets[node] = new
        use = self.uses.get(node)
        if use is None:
            return {}
        held = self.budgets.get(node)
        if held is not None and held.give_back and not use.fresh:
            use = replace(use, released_gen=held.gen)
        return {HOST: replace(use, gen=held.gen if held is not None else None)}

    def poll(self, node_url, poll):
        node = self.ids[node_url]
        return StatusReport(node_id=node, boot_id=f"boot-{node}", attached=True,
                            identities=self._apply(node, poll.budgets),
                            clock=time.time() + self.clock_off.get(node, 0.0))

    def budget_round(self, node_url, round_):
        node = self.ids[node_url]
        self.rounds.append((self.when(), node, dict(round_.budgets)))
        return BudgetRoundAck(node, self._apply(node, round_.budgets))

    def send_batch(self, node_url, drops, puts):
        return SendBatchAck()

    def send_changes(self, node_url, changes):
        return 0


@pytest.fixture
def hub(hub_maker, sqlite_url):
    ids = {}
    with hub_maker.begin() as session:
        for url, name in URLS.items():
            ids[name] = register_node(session, url)[0].id

    class Clock:
        t = 0.0

        def now(self):
            return self.t

        def sleep(self, s):
            self.t += s

    clock = Clock()
    nodes = Nodes({url: ids[name] for url, name in URLS.items()}, clock.now)
    state = poller.PollerState()
    config = hub_config(sqlite_url)

    def tick():
        poller.poll_once(hub_maker, nodes, config, state=state)      # type: ignore[arg-type]

    def rounds(deadline_s: float, nudged=frozenset()) -> int:
        return budget_rounds.run(hub_maker, nodes, config, state, deadline=clock.t + deadline_s,  # type: ignore
                                 nudged=frozenset(ids[n] for n in nudged), clock=clock.now, sleep=clock.sleep)
    return ids, nodes, state, tick, rounds


def holds(hub_maker) -> list[Hold]:
    with hub_maker() as session:
        return [Hold(w.slot, w.node_id, w.start_s, w.end_s, w.rate_per_s, w.gen, w.after_give_back)
                for w in session.scalars(sa.select(IdentityWindow).where(IdentityWindow.identity_id == HOST))]


def test_a_slot_goes_to_the_node_with_freshness_work_within_rounds_and_the_holds_stay_safe(hub, hub_maker):
    ids, nodes, state, tick, rounds = hub
    a, b = ids["a"], ids["b"]
    nodes.uses[a] = IdentityUse(backfill={"t": 3})
    nodes.uses[b] = IdentityUse()
    tick()
    tick()                                  # the first tick learnt the demand, the second hands out the slot
    assert nodes.budgets[a].windows and not nodes.budgets.get(b, Budget(0, HOST)).windows
    [held] = holds(hub_maker)
    assert held.node == a and held.end > time.time() + 5

    # b's page changed (a change-feed nudge): the rounds learn it, ask a, and hand the slot over
    nodes.uses[b] = IdentityUse(fresh={"t": 1})
    before = time.time()
    count = rounds(1.75, nudged={"b"})
    after = time.time()
    by_round: dict[float, dict[str, dict]] = {}
    for t, node, budgets in nodes.rounds:
        by_round.setdefault(t, {})[node] = budgets
    first, second, third = (by_round[t] for t in sorted(by_round))
    assert first == {b: {}}                          # what b wants now
    assert list(second) == [a] and second[a][HOST].give_back         # a is asked, and gives back
    assert set(third) == {a, b}
    assert not third[a][HOST].windows                # a's hold was cut where it gave it back; b has the slot
    [window] = nodes.budgets[b].windows
    limits = default_limits(HOST)
    written = holds(hub_maker)
    cut = next(h for h in written if h.node == a)
    # one slot: b's hold starts where a's was cut (a had stopped, and said so, before the hub read its clock)
    assert before <= cut.end <= after and window.start == cut.end
    assert violations(written, limits.in_flight, binding_rate(limits), 1.0) == []
    assert count == 3                        # then nobody had anything to say: no fourth round


def test_a_round_with_nothing_to_change_talks_to_nobody_and_writes_nothing(hub, hub_maker):
    ids, nodes, state, tick, rounds = hub
    nodes.uses[ids["a"]] = IdentityUse(backfill={"t": 3})
    tick()
    tick()
    written = holds(hub_maker)
    assert rounds(1.75) == 0 and nodes.rounds == [] and holds(hub_maker) == written


def test_rounds_stop_at_their_deadline_and_are_off_at_zero(hub, hub_maker, sqlite_url):
    ids, nodes, state, tick, rounds = hub
    nodes.uses[ids["a"]] = IdentityUse(fresh={"t": 1})      # never gives back: the hub keeps asking
    nodes.uses[ids["b"]] = IdentityUse(backfill={"t": 2})
    tick()
    tick()
    nodes.uses[ids["b"]] = IdentityUse(fresh={"t": 2})
    assert rounds(0.6, nudged={"b"}) == 2                    # 0.25 s apart: two fit in 0.6 s
    off = budget_rounds.run(hub_maker, nodes, hub_config(sqlite_url, BW_BUDGET_ROUND_S="0"), state,  # type: ignore
                            deadline=time.monotonic() + 10, nudged=frozenset({ids["b"]}))
    assert off == 0


def test_a_node_that_does_not_answer_a_round_is_left_to_the_next_tick(hub, hub_maker):
    ids, nodes, state, tick, rounds = hub
    a, b = ids["a"], ids["b"]
    nodes.uses[a] = IdentityUse(fresh={"t": 1})       # holds the slot and is asked again and again
    nodes.uses[b] = IdentityUse(backfill={"t": 2})
    tick()
    tick()
    nodes.uses[b] = IdentityUse(fresh={"t": 2})
    hung = {a}
    answer = nodes.budget_round

    def budget_round(node_url, round_):
        if nodes.ids[node_url] in hung:
            nodes.rounds.append((-1.0, nodes.ids[node_url], {}))
            raise SpawnUnreachable("POST /v1/budgets: timed out", node_url=node_url)
        return answer(node_url, round_)
    nodes.budget_round = budget_round                 # type: ignore[method-assign]
    rounds(1.75, nudged={"b"})
    assert [node for t, node, _ in nodes.rounds if t < 0] == [a]     # asked once, then left alone


def test_a_node_whose_clock_is_certainly_off_gets_no_slot_until_it_is_back_within_the_bound(hub, hub_maker):
    ids, nodes, state, tick, rounds = hub
    a, b = ids["a"], ids["b"]
    nodes.uses[a] = IdentityUse(backfill={"t": 30})       # a wants far more: the allocation would prefer it
    nodes.uses[b] = IdentityUse(backfill={"t": 1})
    nodes.clock_off[a] = 2.0                               # BW_MAX_CLOCK_SKEW_S is 0.1 by default
    for _ in range(3):
        tick()
    rounds(1.0)
    assert {h.node for h in holds(hub_maker)} == {b} and not nodes.budgets.get(a, Budget(0, HOST)).windows
    assert state.clock_off == {a}
    with hub_maker() as session:
        row = {n.id: n for n in session.scalars(sa.select(Node))}
    assert row[a].clock_offset_s == pytest.approx(2.0, abs=0.05) and row[a].clock_error_s < 0.05
    assert abs(row[b].clock_offset_s) < 0.05
    nodes.clock_off[a] = 0.0                               # NTP caught up: a takes turns again
    tick()
    tick()
    assert state.clock_off == frozenset()
