import pytest

from blackwidow.quota.limits import exhausted, own_limit_reached, scheduled, shown


def test_a_tenant_is_exhausted_when_its_subscriptions_used_its_whole_quota():
    quotas = {"a": 100, "b": 100, "c": None, "d": 0}
    usage = [("a", 60), ("a", 40), ("b", 60), ("b", 39), ("c", 10**6)]
    assert exhausted(quotas, usage) == {
        "a": "tenant quota used up: 100 of 100 revisions",
        "d": "tenant quota used up: 0 of 0 revisions",       # a tenant with no subscriptions yet
    }


def test_a_quota_lowered_below_usage_counts_as_used_up():
    assert exhausted({"a": 1000}, [("a", 1500)]) == {"a": "tenant quota used up: 1,500 of 1,000 revisions"}


@pytest.mark.parametrize("state", ["assigned", "running", "waiting"])
def test_active_subscriptions_of_an_exhausted_tenant_show_limit_reached(state):
    assert shown(state, "tenant quota used up: 5 of 5 revisions") == \
        ("limit_reached", "tenant quota used up: 5 of 5 revisions")
    assert shown(state, None) == (state, None)


@pytest.mark.parametrize("state", ["pending", "failed", "disabled", "limit_reached"])
def test_other_states_are_left_as_they_are(state):
    assert shown(state, "tenant quota used up: 5 of 5 revisions") == (state, None)


def test_only_a_subscriptions_own_limit_takes_it_off_its_node():
    assert own_limit_reached(10, 10) and own_limit_reached(10, 12) and not own_limit_reached(10, 9)
    assert not own_limit_reached(None, 10**9)
    assert not scheduled(True, "limit_reached", 10, 10)            # its own quota: done
    assert scheduled(True, "limit_reached", None, 500)             # the tenant's: stays placed
    assert scheduled(True, "limit_reached", 1000, 500)
    assert not scheduled(False, "running", None, 0)
    assert not scheduled(True, "disabled", None, 0)
    assert scheduled(True, "waiting", 10, 3)
