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
    assert (p.window_s, p.handover_s, p.horizon_s, p.cycle_s, p.pause_jitter_s) == (15.0, 1.0, 4.0, 900.0, 2.0)
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
