import pytest

from shared.errors import PayloadTooLarge, ValidationError
from shared.wire import (MAX_BATCH_ITEMS, Budget, DropAck, IdentityUse, ItemError, Poll, PutAck, Registration,
                         SendBatch, SendBatchAck, StatusReport, SubscriptionSpec, SubscriptionStatus, Window)


def spec(**kw):
    base = dict(id="s1", source_uuid="u1", tenant_id="t1", wiki="https://en.wikipedia.org/w/api.php",
                title="Pyrus", content=False, quota=10)
    base.update(kw)
    return base


def test_spec_round_trip_and_equality_means_no_change():
    s = SubscriptionSpec.from_dict(spec())
    assert SubscriptionSpec.from_dict(s.to_dict()) == s
    assert SubscriptionSpec.from_dict(spec(quota=11)) != s


@pytest.mark.parametrize("field,value", [("quota", -1), ("quota", "ten"), ("quota", True), ("title", 3),
                                         ("content", "yes"), ("id", None)])
def test_spec_errors_name_the_field(field, value):
    with pytest.raises(ValidationError) as err:
        SubscriptionSpec.from_dict(spec(**{field: value}))
    assert err.value.field == field


def test_status_report_round_trip():
    report = StatusReport(node_id="n", boot_id="b", attached=True, sources=1,
                          subscriptions=(SubscriptionStatus(id="s1", state="running", revisions=5, last_rev_id=9),))
    assert StatusReport.from_dict(report.to_dict()) == report


def test_a_status_carries_its_page_key_and_an_older_spawn_without_one_is_understood():
    status = SubscriptionStatus(id="s1", state="running", page_key="u2")
    assert SubscriptionStatus.from_dict(status.to_dict()) == status
    assert SubscriptionStatus.from_dict({"id": "s1", "state": "running"}).page_key is None
    with pytest.raises(ValidationError) as err:
        SubscriptionStatus.from_dict({"id": "s1", "state": "running", "page_key": 7})
    assert err.value.field == "page_key"


@pytest.mark.parametrize("complete", [True, False, None])
def test_a_status_says_whether_its_history_was_proven_complete_and_an_older_spawn_means_unknown(complete):
    status = SubscriptionStatus(id="s1", state="running", complete=complete)
    assert SubscriptionStatus.from_dict(status.to_dict()) == status
    assert SubscriptionStatus.from_dict({"id": "s1", "state": "running"}).complete is None
    with pytest.raises(ValidationError) as err:
        SubscriptionStatus.from_dict({"id": "s1", "state": "running", "complete": "yes"})
    assert err.value.field == "complete"


def test_an_unknown_state_is_kept_for_the_hub_to_ignore():
    # a newer spawn in a rolling upgrade may report a state this version does not know
    assert SubscriptionStatus.from_dict({"id": "s", "state": "exploded"}).state == "exploded"


def test_one_malformed_status_item_is_rejected_alone():
    report = StatusReport.from_dict({"boot_id": "b", "attached": True, "subscriptions": [
        {"id": "a", "state": "running"}, {"state": "running"}, {"id": "c", "state": "brand-new", "revisions": 3}]})
    assert [s.id for s in report.subscriptions] == ["a", "c"]
    assert report.rejected == ("subscriptions[1]: 'id' is required",)


def test_poll_and_registration_validation():
    assert Poll.from_dict({"node_id": "n", "assigned": ["a"]}).assigned == ("a",)
    with pytest.raises(ValidationError):
        Poll.from_dict({"node_id": "n", "assigned": [1]})
    assert Registration.from_dict({"url": "http://127.0.0.1:8701/"}).url == "http://127.0.0.1:8701"
    with pytest.raises(ValidationError) as err:
        Registration.from_dict({"url": "ftp://x"})
    assert err.value.field == "url"


def test_send_batch_and_its_ack_round_trip():
    s1 = SubscriptionSpec.from_dict(spec())
    batch = SendBatch.of(["old"], [s1])
    assert batch.to_dict() == {"drops": ["old"], "puts": [s1.to_dict()]}
    assert SendBatch.from_dict(batch.to_dict()) == batch
    assert SendBatch.from_dict({}) == SendBatch()
    ack = SendBatchAck(drops=(DropAck("old", False),),
                       puts=(PutAck("s1", "running", False), ItemError("s2", "invalid", "bad", "title")))
    assert ack.to_dict()["puts"][1] == {"id": "s2",
                                        "error": {"code": "invalid", "message": "bad", "field": "title"}}
    assert SendBatchAck.from_dict(ack.to_dict()) == ack


def test_send_batch_item_limit_names_the_list_that_crosses_it():
    with pytest.raises(PayloadTooLarge) as err:
        SendBatch.from_dict({"drops": ["d"] * (MAX_BATCH_ITEMS + 1)})
    assert err.value.field == "drops"
    with pytest.raises(PayloadTooLarge) as err:
        SendBatch.from_dict({"drops": ["d"] * 10, "puts": [spec()] * (MAX_BATCH_ITEMS - 9)})
    assert err.value.field == "puts"
    assert len(SendBatch.from_dict({"drops": ["d"] * 10, "puts": [spec()] * (MAX_BATCH_ITEMS - 10)}).puts) > 0


@pytest.mark.parametrize("body, field", [({"drops": [{"id": "d"}], "puts": []}, "drops"),
                                         ({"drops": [], "puts": [{"id": "s", "state": "running"}]}, "puts"),
                                         ({"drops": []}, "puts")])
def test_send_batch_ack_errors_name_the_list(body, field):
    with pytest.raises(ValidationError) as err:
        SendBatchAck.from_dict(body)
    assert err.value.field == field


def budget(**kw):
    base = dict(gen=3, wiki_host="en.wikipedia.org", credential="enwiki-bot",
                windows=[{"start": 100.0, "end": 160.0, "slots": 1, "rate_per_s": 4.75},
                         {"start": 160.0, "end": 220.0, "slots": 2, "rate_per_s": 4.75}],
                slow_after_s=1.0, slow_wait_s=5.0, maxlag=5, paused_until=None, weights={"t1": 1.0, "t2": 3})
    base.update(kw)
    return base


def test_a_budget_round_trips_and_defaults_what_an_older_hub_leaves_out():
    b = Budget.from_dict(budget())
    assert b.windows == (Window(100.0, 160.0, 1, 4.75), Window(160.0, 220.0, 2, 4.75))
    assert b.weights == {"t1": 1.0, "t2": 3.0}
    assert Budget.from_dict(b.to_dict()) == b
    bare = Budget.from_dict({"gen": 1, "wiki_host": "127.0.0.1:8790"})
    assert (bare.credential, bare.windows, bare.slow_after_s, bare.slow_wait_s, bare.maxlag, bare.paused_until,
            bare.weights) == (None, (), 1.0, 5.0, 5, None, {})


@pytest.mark.parametrize("change, field", [
    ({"gen": 0}, "gen"), ({"gen": "1"}, "gen"), ({"wiki_host": None}, "wiki_host"), ({"credential": 7}, "credential"),
    ({"windows": [{"start": 10, "end": 10, "slots": 1, "rate_per_s": 1}]}, "windows"),
    ({"windows": [{"start": 10, "end": 20, "slots": 0, "rate_per_s": 1}]}, "windows"),
    ({"windows": [{"start": 10, "end": 20, "slots": 1, "rate_per_s": 0}]}, "windows"),
    ({"windows": [{"start": 10, "end": 20, "slots": 1}]}, "windows"),
    ({"windows": [{"start": 10, "end": 30, "slots": 1, "rate_per_s": 1},
                  {"start": 20, "end": 40, "slots": 1, "rate_per_s": 1}]}, "windows"),
    ({"windows": [{"start": s, "end": s + 1, "slots": 1, "rate_per_s": 1} for s in (1, 2, 3)]}, "windows"),
    ({"slow_after_s": 0}, "slow_after_s"), ({"slow_wait_s": -1}, "slow_wait_s"), ({"maxlag": -1}, "maxlag"),
    ({"paused_until": "soon"}, "paused_until"), ({"weights": {"t1": -1}}, "weights"),
    ({"weights": {"t1": True}}, "weights"), ({"weights": []}, "weights"),
])
def test_budget_errors_name_the_field(change, field):
    with pytest.raises(ValidationError) as err:
        Budget.from_dict(budget(**change))
    assert err.value.field == field


def test_a_poll_carries_budgets_only_when_there_are_some():
    b = Budget.from_dict(budget())
    poll = Poll(node_id="n", assigned=("s1",), budgets={"en.wikipedia.org": b})
    assert Poll.from_dict(poll.to_dict()) == poll
    assert "budgets" not in Poll(node_id="n").to_dict()
    with pytest.raises(ValidationError) as err:
        Poll.from_dict({"node_id": "n", "budgets": {"en.wikipedia.org": budget(gen=0)}})
    assert err.value.field == "budgets" and "en.wikipedia.org" in err.value.message


def test_a_status_report_carries_identity_use_only_when_there_is_some():
    use = IdentityUse(gen=3, fresh={"t1": 2}, backfill={"t1": 1, "t2": 5}, requests=40, throttled=1, busy_s=12.5,
                      paused_until=1234.5, pause_reason="429 Retry-After 30", auth_error=None)
    report = StatusReport(node_id="n", boot_id="b", attached=True, identities={"en.wikipedia.org": use})
    assert StatusReport.from_dict(report.to_dict()) == report
    assert "identities" not in StatusReport(node_id="n", boot_id="b", attached=True).to_dict()
    assert IdentityUse.from_dict({}) == IdentityUse()
    for bad in ({"gen": 0}, {"fresh": {"t1": -1}}, {"backfill": {"t1": 1.5}}, {"requests": -1}, {"busy_s": "x"},
                {"auth_error": 1}):
        with pytest.raises(ValidationError) as err:
            StatusReport.from_dict({"boot_id": "b", "attached": True, "identities": {"h": bad}})
        assert err.value.field == "identities"


def test_a_spec_names_its_identity_and_a_legacy_spec_has_none():
    s = SubscriptionSpec.from_dict(spec(identity="en.wikipedia.org"))
    assert s.identity == "en.wikipedia.org" and SubscriptionSpec.from_dict(s.to_dict()) == s
    assert SubscriptionSpec.from_dict(spec()).identity is None
    with pytest.raises(ValidationError) as err:
        SubscriptionSpec.from_dict(spec(identity=3))
    assert err.value.field == "identity"


def test_tokened_reports_and_deltas_round_trip_and_stay_absent_when_unused():
    from shared.wire import ReportPage, StatusReport, SubscriptionStatus
    delta = StatusReport(node_id="n", boot_id="b", attached=True, subscriptions=(SubscriptionStatus("a", "running"),),
                         token="b.2", delta=True, removed=("c",))
    assert StatusReport.from_dict(delta.to_dict()) == delta
    whole = StatusReport(node_id="n", boot_id="b", attached=True)
    assert {"token", "delta", "removed"}.isdisjoint(whole.to_dict())      # as a spawn without tokens answers
    assert ReportPage.from_dict(ReportPage("x", 5, "b.1").to_dict()) == ReportPage("x", 5, "b.1")
    assert "since" not in ReportPage(None, 5).to_dict()


def test_removed_ids_must_be_strings():
    import pytest
    from shared.errors import ValidationError
    from shared.wire import StatusReport
    with pytest.raises(ValidationError) as info:
        StatusReport.from_dict({"boot_id": "b", "attached": True, "delta": True, "removed": [1]})
    assert info.value.field == "removed"
