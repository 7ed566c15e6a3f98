import pytest

from shared.errors import ValidationError
from shared.wire import Poll, Registration, StatusReport, SubscriptionSpec, SubscriptionStatus


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
