"""Dump bootstraps on the wire (shared.dump_wire): round trips, what an older peer leaves out, and refusals naming
their field."""
import pytest

from shared.dump_wire import DumpDuty, DumpReport, Resume
from shared.errors import ValidationError
from shared.wire import Poll, StatusReport

DUTY = DumpDuty(file_id="f1", set_id="s1", url="https://dumps.example.org/chwiki/part1.xml.bz2",
                wiki="https://ch.wikipedia.org/w/api.php", dbname="chwiki", content=True,
                resume=Resume(pages=4, last_page_id=40, revisions=12))
REPORT = DumpReport(file_id="f1", state="reading", resume=Resume(4, 40, 12), bytes_read=100, bytes_total=1000,
                    revisions_read=7, revisions_per_s=3.5, bytes_per_s=50.0)


def report(**kw) -> dict:
    return {**REPORT.to_dict(), **kw}


def duty(**kw) -> dict:
    return {**DUTY.to_dict(), **kw}


@pytest.mark.parametrize("value", [Resume(), Resume(3, 30, 9), Resume(1, 5), Resume(3, 30, 2009, 41, 2000)])
def test_resume_round_trip(value):
    assert Resume.from_dict(value.to_dict()) == value


def test_a_resume_left_out_is_the_files_start():
    assert Resume.from_dict({}) == Resume()
    body = duty()
    body.pop("resume")
    assert DumpDuty.from_dict(body).resume == Resume()


@pytest.mark.parametrize("value", [DUTY, DumpDuty("f", "s", "http://d/a.xml", "http://w/api.php")])
def test_duty_round_trip_and_an_absent_dbname_stays_absent(value):
    assert DumpDuty.from_dict(value.to_dict()) == value
    assert ("dbname" in value.to_dict()) == (value.dbname is not None)


@pytest.mark.parametrize("value", [REPORT, DumpReport("f", "failed", error="DumpNotFound: HTTP 404"),
                                   DumpReport("f", "done", resume=Resume(2, 9, 4))])
def test_report_round_trip(value):
    assert DumpReport.from_dict(value.to_dict()) == value


def test_a_report_leaves_out_what_it_does_not_know():
    body = DumpReport("f", "reading").to_dict()
    assert "bytes_total" not in body and "error" not in body


@pytest.mark.parametrize("body, field", [
    (report(state="paused"), "state"),
    (report(bytes_read=-1), "bytes_read"),
    (report(revisions_read=True), "revisions_read"),
    (report(bytes_total="big"), "bytes_total"),
    (report(revisions_per_s=-0.5), "revisions_per_s"),
    (report(bytes_per_s=False), "bytes_per_s"),
    (report(error=3), "error"),
    (report(file_id=None), "file_id"),
])
def test_report_errors_name_the_field(body, field):
    with pytest.raises(ValidationError) as err:
        DumpReport.from_dict(body)
    assert err.value.field == field


@pytest.mark.parametrize("body, field", [
    (duty(url="ftp://dumps.example.org/a.xml"), "url"),
    (duty(url="/srv/dumps/a.xml"), "url"),
    (duty(wiki=None), "wiki"),
    (duty(set_id=7), "set_id"),
    (duty(content="yes"), "content"),
    (duty(resume=[]), "resume"),
])
def test_duty_errors_name_the_field(body, field):
    with pytest.raises(ValidationError) as err:
        DumpDuty.from_dict(body)
    assert err.value.field == field


@pytest.mark.parametrize("body, field", [
    ({"pages": -1}, "pages"), ({"pages": 2}, "last_page_id"), ({"pages": 2, "last_page_id": -3}, "last_page_id"),
    ({"revisions": "many"}, "revisions"), ({"pages": 1.5, "last_page_id": 1}, "pages"),
    ({"part_revisions": 2000}, "part_page_id"), ({"part_revisions": -1, "part_page_id": 4}, "part_revisions"),
])
def test_resume_errors_name_the_field(body, field):
    with pytest.raises(ValidationError) as err:
        Resume.from_dict(body)
    assert err.value.field == field


def test_a_poll_carries_dump_duties_only_when_there_are_some():
    poll = Poll(node_id="n", assigned=("a",), dumps=(DUTY,))
    assert Poll.from_dict(poll.to_dict()) == poll
    assert "dumps" not in Poll(node_id="n", assigned=()).to_dict()
    assert Poll.from_dict({"node_id": "n", "assigned": []}).dumps == ()


def test_a_status_report_carries_dump_reports_only_when_there_are_some():
    status = StatusReport(node_id="n", boot_id="b", attached=True, dumps={"f1": REPORT})
    assert StatusReport.from_dict(status.to_dict()) == status
    assert "dumps" not in StatusReport(node_id="n", boot_id="b", attached=True).to_dict()


def test_a_malformed_duty_or_report_names_the_list_or_map_it_sits_in():
    with pytest.raises(ValidationError) as err:
        Poll.from_dict({"node_id": "n", "assigned": [], "dumps": [duty(url="file:///etc/passwd")]})
    assert err.value.field == "dumps" and "dumps[0]" in err.value.message and "url" in err.value.message
    body = StatusReport(node_id="n", boot_id="b", attached=True, dumps={"f1": REPORT}).to_dict()
    body["dumps"]["f1"]["state"] = "paused"
    with pytest.raises(ValidationError) as err:
        StatusReport.from_dict(body)
    assert err.value.field == "dumps" and "dumps.f1" in err.value.message and "state" in err.value.message
