import pytest

from shared.errors import PayloadTooLarge, ValidationError
from shared.wire import (MAX_BATCH_ITEMS, DropAck, ItemError, Poll, PutAck, Registration, SendBatch,
                         SendBatchAck, StatusReport, SubscriptionSpec, SubscriptionStatus)


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


def test_unknown_state_is_rejected():
    with pytest.raises(ValidationError) as err:
        SubscriptionStatus.from_dict({"id": "s", "state": "exploded"})
    assert err.value.field == "state"


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
