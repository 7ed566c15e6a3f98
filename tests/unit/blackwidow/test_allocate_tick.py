"""blackwidow.upstream.tick: the functions the scheduler's tick calls, from config and reports to polls."""
from blackwidow.store.identities import UpstreamSnapshot
from blackwidow.upstream.allocate import IdentityState
from blackwidow.upstream.limits import default_limits
from blackwidow.upstream.slots import Hold
from blackwidow.upstream.tick import budgets_for, params, plan_budgets
from shared.config import HubConfig
from shared.wire import IdentityUse

NOW = 5_000.0


def _config(**env) -> HubConfig:
    return HubConfig.from_env({"BW_ADMIN_TOKEN": "a", "BW_NODE_SECRET": "b", **env})


def test_params_follow_the_poll_interval_and_the_clock_skew():
    p = params(_config())
    assert (p.window_s, p.handover_s, p.horizon_s, p.cycle_s, p.pause_jitter_s) == (15.0, 0.2, 4.0, 900.0, 2.0)
    p = params(_config(BW_POLL_INTERVAL_S="10", BW_MAX_CLOCK_SKEW_S="1", BW_BUDGET_WINDOW_S="5"))
    assert (p.window_s, p.handover_s, p.horizon_s) == (22.0, 2.0, 20.0)      # a hold outlasts the horizon


def test_plans_cover_identities_with_demand_or_holds_and_ignore_nodes_that_are_not_live():
    idle = IdentityState("de.wikipedia.org", default_limits("de.wikipedia.org"), 3, None, ())
    held = IdentityState("fr.wikipedia.org", default_limits("fr.wikipedia.org"), 4, None,
                         (Hold(0, "gone", NOW - 5, NOW + 5, 3.0, 4),))
    wanted = IdentityState("en.wikipedia.org", default_limits("en.wikipedia.org"), 0, None, ())
    snap = UpstreamSnapshot({s.id: s for s in (idle, held, wanted)}, {"t": 2.0}, frozenset({"de.wikipedia.org"}))
    uses = {"a": {"en.wikipedia.org": IdentityUse(backfill={"t": 3})},
            "dead": {"en.wikipedia.org": IdentityUse(fresh={"t": 1})},
            "b": {"en.wikipedia.org": IdentityUse()}}
    plans = plan_budgets(snap, uses, ["a", "b", "gone"], NOW, params(_config()))
    assert set(plans) == {"fr.wikipedia.org", "en.wikipedia.org"}
    assert [h.node for h in plans["en.wikipedia.org"].writes] == ["a"]
    assert set(budgets_for(plans, "a")) == {"en.wikipedia.org"}
    assert budgets_for(plans, "b")["en.wikipedia.org"].windows == ()      # reported, no demand: a budget, no slot
    assert set(budgets_for(plans, "gone")) == {"fr.wikipedia.org"}        # its hold runs to its end
    assert budgets_for(plans, "dead") == {}
    assert plans["en.wikipedia.org"].budgets["a"].gen == 1


def test_one_node_at_a_time_may_log_in_with_a_credential_and_keeps_its_turn_until_it_has_a_session():
    host = "127.0.0.1:8787"
    bot = IdentityState(host, default_limits(host, "bot"), 0, None, ())
    snap = UpstreamSnapshot({host: bot}, {}, frozenset({host}))
    waiting = {n: {host: IdentityUse(backfill={"t": 1}, needs_login=True)} for n in ("a", "b", "c")}
    plans = plan_budgets(snap, waiting, ["a", "b", "c"], NOW, params(_config()))
    turns = [n for n in "abc" if budgets_for(plans, n)[host].login]
    assert len(turns) == 1
    again = plan_budgets(snap, waiting, ["a", "b", "c"], NOW + 2, params(_config()))
    assert [n for n in "abc" if budgets_for(again, n)[host].login] == turns        # stable: no second login
    done = {**waiting, turns[0]: {host: IdentityUse(backfill={"t": 1})}}
    after = plan_budgets(snap, done, ["a", "b", "c"], NOW + 4, params(_config()))
    nxt = [n for n in "abc" if budgets_for(after, n)[host].login]
    assert len(nxt) == 1 and nxt != turns
    anonymous = IdentityState("en.wikipedia.org", default_limits("en.wikipedia.org"), 0, None, ())
    plain = plan_budgets(UpstreamSnapshot({anonymous.id: anonymous}, {}, frozenset()),
                         {"a": {anonymous.id: IdentityUse(backfill={"t": 1}, needs_login=True)}}, ["a"], NOW,
                         params(_config()))
    assert not budgets_for(plain, "a")[anonymous.id].login          # no credential: nothing to log in with
