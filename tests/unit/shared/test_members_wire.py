"""Category sets' membership on the wire (shared.members_wire): round trips, what an older peer leaves out, refusals
naming their field, the listing's digest and its parts."""
import pytest

from shared.errors import ValidationError
from shared.members_wire import PART, Member, MembersDuty, MembersReport, digest, part, parts
from shared.wire import Poll, StatusReport

DUTY = MembersDuty(set_id="s1", wiki="https://ch.wikipedia.org/w/api.php", category="Category:Physics", depth=2,
                   identity="bot-1", tenants=("t1", "t2"), interval_s=60.0, held="a" * 32, receiving="b" * 32,
                   next_part=3)
MEMBERS = (Member(1, 0, "Atom"), Member(2, 6, "File:Atom.png"), Member(5, 0, "Quark"))
REPORT = MembersReport(set_id="s1", digest=digest(MEMBERS), total=3, parts=1, part=0, members=MEMBERS,
                       read_at="2026-11-25T08:00:00Z", requests=4)


def duty(**kw) -> dict:
    return {**DUTY.to_dict(), **kw}


def report(**kw) -> dict:
    return {**REPORT.to_dict(), **kw}


def many(n: int, *, start: int = 1) -> list[Member]:
    return [Member(i, 0, f"Page {i}") for i in range(start, start + n)]


@pytest.mark.parametrize("value", [
    DUTY,
    MembersDuty("s", "http://w/api.php", "Category:A"),
    MembersDuty("s", "http://w/api.php", "Category:A", held="x" * 32),
    MembersDuty("s", "http://w/api.php", "Category:A", receiving="y" * 32, next_part=1, interval_s=0.5),
])
def test_duty_round_trip_and_absent_optionals_stay_absent(value):
    body = value.to_dict()
    assert MembersDuty.from_dict(body) == value
    for name in ("identity", "held", "receiving"):
        assert (name in body) == (getattr(value, name) is not None)


def test_a_duty_an_older_hub_leaves_short_takes_the_defaults():
    assert MembersDuty.from_dict({"set_id": "s", "wiki": "http://w/api.php", "category": "Category:A"}) == (
        MembersDuty("s", "http://w/api.php", "Category:A", depth=0, identity=None, tenants=(), interval_s=300.0,
                    held=None, receiving=None, next_part=0))


def test_an_integer_interval_is_taken_as_seconds():
    assert MembersDuty.from_dict(duty(interval_s=30)).interval_s == 30.0


@pytest.mark.parametrize("value", [
    REPORT,
    MembersReport("s1"),                                                       # nothing read yet
    MembersReport("s1", digest="d" * 32, total=4500, parts=3, read_at="2026-11-25T08:00:00Z", requests=9),
    MembersReport("s1", digest=digest([]), total=0, parts=1, part=0),           # an empty category
    MembersReport("s1", digest="d" * 32, total=3, parts=1, part=0, members=MEMBERS, error="BadResponse: no"),
])
def test_report_round_trip(value):
    assert MembersReport.from_dict(value.to_dict()) == value


def test_a_report_of_a_listing_the_hub_holds_carries_no_members():
    body = MembersReport("s1", digest="d" * 32, total=3, parts=1).to_dict()
    assert "members" not in body and "part" not in body
    assert "members" in MembersReport("s1", digest=digest([]), total=0, parts=1, part=0).to_dict()


def test_a_report_before_the_first_listing_leaves_out_what_it_does_not_know():
    body = MembersReport("s1").to_dict()
    assert body == {"set_id": "s1", "total": 0, "parts": 0, "requests": 0}


def test_members_travel_as_lists():
    assert REPORT.to_dict()["members"] == [[1, 0, "Atom"], [2, 6, "File:Atom.png"], [5, 0, "Quark"]]
    assert Member.from_list([7, 14, "Category:X"]) == Member(7, 14, "Category:X")


@pytest.mark.parametrize("body, field", [
    (duty(depth=-1), "depth"),
    (duty(depth=1.5), "depth"),
    (duty(depth=True), "depth"),
    (duty(interval_s=0), "interval_s"),
    (duty(interval_s=-5.0), "interval_s"),
    (duty(interval_s=True), "interval_s"),
    (duty(interval_s="60"), "interval_s"),
    (duty(next_part=-1), "next_part"),
    (duty(tenants=["t1", 2]), "tenants"),
    (duty(tenants="t1"), "tenants"),
    (duty(set_id=None), "set_id"),
    (duty(wiki=7), "wiki"),
    (duty(category=None), "category"),
    (duty(identity=3), "identity"),
    (duty(held=["x"]), "held"),
    (duty(receiving=1), "receiving"),
])
def test_duty_errors_name_the_field(body, field):
    with pytest.raises(ValidationError) as err:
        MembersDuty.from_dict(body)
    assert err.value.field == field


@pytest.mark.parametrize("body, field", [
    (report(part=1), "part"),                                   # part >= parts
    (report(part=-1), "part"),
    (report(parts=0), "part"),
    (report(part="0"), "part"),
    (report(total=-1), "total"),
    (report(parts=True), "parts"),
    (report(requests=-2), "requests"),
    (report(members=[[1, 0]]), "members"),
    (report(members=[[1, 0, ""]]), "members"),
    (report(members=[[-1, 0, "A"]]), "members"),
    (report(members=[[1, True, "A"]]), "members"),
    (report(members=[["1", 0, "A"]]), "members"),
    (report(members=[[1, 0, 5]]), "members"),
    (report(members=[{"pageid": 1, "ns": 0, "title": "A"}]), "members"),
    (report(members={"1": [1, 0, "A"]}), "members"),
    (report(members=[m.to_list() for m in many(PART + 1)], parts=2), "members"),
    (report(set_id=None), "set_id"),
    (report(digest=32), "digest"),
    (report(read_at=0), "read_at"),
    (report(error=False), "error"),
])
def test_report_errors_name_the_field(body, field):
    with pytest.raises(ValidationError) as err:
        MembersReport.from_dict(body)
    assert err.value.field == field


def test_a_full_part_is_taken():
    body = report(members=[m.to_list() for m in many(PART)], total=PART, parts=1)
    assert len(MembersReport.from_dict(body).members) == PART


def test_a_poll_carries_members_duties_only_when_there_are_some():
    poll = Poll(node_id="n", assigned=("a",), members=(DUTY, MembersDuty("s2", "http://w/api.php", "Category:B")))
    assert Poll.from_dict(poll.to_dict()) == poll
    assert "members" not in Poll(node_id="n", assigned=()).to_dict()
    assert Poll.from_dict({"node_id": "n", "assigned": []}).members == ()


def test_a_status_report_carries_members_reports_only_when_there_are_some():
    status = StatusReport(node_id="n", boot_id="b", attached=True,
                          members={"s1": REPORT, "s2": MembersReport("s2")})
    assert StatusReport.from_dict(status.to_dict()) == status
    assert "members" not in StatusReport(node_id="n", boot_id="b", attached=True).to_dict()
    assert StatusReport.from_dict(StatusReport(node_id="n", boot_id="b", attached=True).to_dict()).members == {}


def test_a_malformed_duty_or_report_names_the_list_or_map_it_sits_in():
    with pytest.raises(ValidationError) as err:
        Poll.from_dict({"node_id": "n", "assigned": [], "members": [duty(), duty(depth=-1)]})
    assert err.value.field == "members" and "members[1]" in err.value.message and "depth" in err.value.message
    body = StatusReport(node_id="n", boot_id="b", attached=True, members={"s1": REPORT}).to_dict()
    body["members"]["s1"]["part"] = 5
    with pytest.raises(ValidationError) as err:
        StatusReport.from_dict(body)
    assert err.value.field == "members" and "members.s1" in err.value.message and "part" in err.value.message


@pytest.mark.parametrize("a, b", [
    (list(MEMBERS), list(reversed(MEMBERS))),
    (list(MEMBERS), [MEMBERS[1], MEMBERS[2], MEMBERS[0]]),
    (list(MEMBERS), list(MEMBERS) + [MEMBERS[0]]),              # a page listed twice is one page
    ([], []),
    (many(PART + 1), list(reversed(many(PART + 1)))),
])
def test_equal_listings_have_equal_digests_in_any_order(a, b):
    assert digest(a) == digest(b)
    assert len(digest(a)) == 32


@pytest.mark.parametrize("changed", [
    [Member(1, 0, "Atom (physics)"), MEMBERS[1], MEMBERS[2]],      # a move: same page, new title
    [Member(1, 4, "Atom"), MEMBERS[1], MEMBERS[2]],                 # a move to another namespace
    [Member(3, 0, "Atom"), MEMBERS[1], MEMBERS[2]],                 # another page under the title
    list(MEMBERS[:2]),                                              # a page removed
    list(MEMBERS) + [Member(9, 0, "Gluon")],                        # a page added
    [],
])
def test_a_changed_listing_has_another_digest(changed):
    assert digest(changed) != digest(MEMBERS)


@pytest.mark.parametrize("n, count, sizes", [
    (0, 1, [0]),
    (1, 1, [1]),
    (PART, 1, [PART]),
    (PART + 1, 2, [PART, 1]),
    (2 * PART, 2, [PART, PART]),
    (2 * PART + 7, 3, [PART, PART, 7]),
])
def test_a_listing_travels_in_parts_of_at_most_part_members(n, count, sizes):
    members = list(reversed(many(n)))                   # parts are cut from the listing sorted by page id
    assert parts(members) == count
    cut = [part(members, i) for i in range(count)]
    assert [len(p) for p in cut] == sizes
    assert [m for p in cut for m in p] == sorted(members)
    assert part(members, count) == ()


def test_a_part_is_cut_by_page_id_whatever_the_titles():
    members = [Member(3, 0, "A"), Member(1, 0, "Z"), Member(2, 0, "M")]
    assert part(members, 0) == (Member(1, 0, "Z"), Member(2, 0, "M"), Member(3, 0, "A"))
