"""blackwidow.upstream.rounds: what a budget round between two ticks delivers, and to whom. Table tests."""
import pytest

from blackwidow.upstream.allocate import Plan
from blackwidow.upstream.rounds import awaited, changes_use, deliveries, delivered
from shared.wire import Budget, IdentityUse, Window

W = Window(100.0, 115.0, 1, 3.0)
LATER = Window(100.0, 130.0, 1, 3.0)
B = Budget(gen=5, wiki_host="w", windows=(W,))


def plan(**budgets: Budget) -> Plan:
    return Plan(gen=6, writes=(), drops=(), budgets=dict(budgets), targets={})


@pytest.mark.parametrize("old, new, changes", [
    (None, Budget(gen=1, wiki_host="w"), False),                             # nothing to act on yet
    (None, Budget(gen=1, wiki_host="w", windows=(W,)), True),
    (None, Budget(gen=1, wiki_host="w", give_back=True), True),
    (None, Budget(gen=1, wiki_host="w", paused_until=200.0), True),
    (B, Budget(gen=6, wiki_host="w", windows=(W,)), False),                  # a new gen alone
    (B, Budget(gen=6, wiki_host="w", windows=(W,), weights={"t": 1.0}, served={"t": 3.0}), False),
    (B, Budget(gen=6, wiki_host="w", windows=(LATER,)), True),               # extended
    (B, Budget(gen=6, wiki_host="w"), True),                                 # cut
    (B, Budget(gen=6, wiki_host="w", windows=(W,), give_back=True), True),   # asked
    (B, Budget(gen=6, wiki_host="w", windows=(W,), paused_until=300.0), True),
    (B, Budget(gen=6, wiki_host="w", windows=(W,), maxlag=10), True),
    (B, Budget(gen=6, wiki_host="w", windows=(W,), login=True), True),
])
def test_a_budget_changes_what_its_node_does(old, new, changes):
    assert changes_use(old, new) is changes


def test_deliveries_are_the_planned_budgets_that_change_something_per_node_and_identity():
    sent = {"a": {"w": B}, "b": {"w": Budget(gen=5, wiki_host="w")}}
    plans = {"w": plan(a=Budget(gen=6, wiki_host="w", windows=(W,), give_back=True),
                       b=Budget(gen=6, wiki_host="w"), c=Budget(gen=6, wiki_host="w", windows=(LATER,))),
             "x": plan(a=Budget(gen=6, wiki_host="x", windows=(W,)))}
    assert deliveries(plans, sent) == {"a": {"w": plans["w"].budgets["a"], "x": plans["x"].budgets["a"]},
                                       "c": {"w": plans["w"].budgets["c"]}}


@pytest.mark.parametrize("use, waiting", [
    (None, True),                                        # never answered since
    (IdentityUse(gen=5), True),
    (IdentityUse(gen=5, released_gen=4), True),          # gave back an older gen: not this ask
    (IdentityUse(gen=5, released_gen=5), False),
    (IdentityUse(gen=6, released_gen=6), False),
])
def test_a_node_asked_to_give_back_is_awaited_until_it_says_it_did(use, waiting):
    sent = {"a": {"w": Budget(gen=5, wiki_host="w", windows=(W,), give_back=True)}, "b": {"w": B}}
    uses = {} if use is None else {"a": {"w": use}}
    assert awaited(sent, uses) == (frozenset({"a"}) if waiting else frozenset())


def test_a_delivery_replaces_the_identities_it_names_and_keeps_the_others():
    x = Budget(gen=2, wiki_host="x")
    held = {"w": B, "x": x}
    new = Budget(gen=6, wiki_host="w", windows=(LATER,))
    assert delivered(held, {"w": new}) == {"w": new, "x": x}
    assert delivered({}, {"w": new}) == {"w": new}                  # a node sent nothing before
    assert held == {"w": B, "x": x}          # not changed in place
