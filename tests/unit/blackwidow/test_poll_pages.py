"""Bounded polls on the hub (blackwidow.poll_pages, pure): requests, when to stop, one report from the answers."""
import pytest

from blackwidow import poll_pages
from blackwidow.poll_pages import Paging, PagingError
from shared.wire import Budget, Lease, Poll, PollPage, ReportPage, StatusReport, SubscriptionStatus

PAGING = Paging(page_ids=2, report_items=3)
LEASE = Lease(cap=10, ttl_s=30.0, gen=1)
BUDGET = Budget(gen=1, wiki_host="wiki.test")


@pytest.mark.parametrize("ids, size, expected", [
    ([], 2, [()]),
    (["b", "a"], 2, [("a", "b")]),
    (["c", "a", "b"], 2, [("a", "b"), ("c",)]),
    (["e", "d", "c", "b", "a"], 2, [("a", "b"), ("c", "d"), ("e",)]),
])
def test_ids_split_into_sorted_pages(ids, size, expected):
    assert poll_pages.split(ids, size) == expected


@pytest.mark.parametrize("pages, index, after, expected", [
    # one page: a whole list, as every spawn version reads it; budgets and every lease on it
    ([("a", "b")], 0, None,
     Poll("n", ("a", "b"), {"a": LEASE, "c": LEASE, "z": LEASE}, {"w": BUDGET}, None, ReportPage(None, 3))),
    # a report page after the first repeats the whole list, without budgets
    ([("a", "b")], 1, "b", Poll("n", ("a", "b"), {"a": LEASE}, {}, None, ReportPage("b", 3))),
    # pages of a round: each with its own leases; a lease of an unlisted id rides on the first
    ([("a", "b"), ("c",)], 0, None,
     Poll("n", ("a", "b"), {"a": LEASE, "z": LEASE}, {"w": BUDGET}, PollPage("r", 0, 2), ReportPage(None, 3))),
    ([("a", "b"), ("c",)], 1, "c", Poll("n", ("c",), {"c": LEASE}, {}, PollPage("r", 1, 2), ReportPage("c", 3))),
    # past the last page the last one is repeated while the report goes on
    ([("a", "b"), ("c",)], 3, "x", Poll("n", ("c",), {"c": LEASE}, {}, PollPage("r", 1, 2), ReportPage("x", 3))),
])
def test_the_requests_of_one_poll(pages, index, after, expected):
    leases = {"a": LEASE, "c": LEASE, "z": LEASE}
    assert poll_pages.request("n", pages, index, "r", leases, {"w": BUDGET}, after, PAGING) == expected


def answer(*ids, boot="b1", next=None):
    return StatusReport(node_id="n", boot_id=boot, attached=True,
                        subscriptions=tuple(SubscriptionStatus(i, "running") for i in ids), next=next)


@pytest.mark.parametrize("index, pages, report, after, expected", [
    (0, 1, answer("a"), None, False),                 # one page, report whole: done
    (0, 2, answer("a"), None, True),                  # a page of ids left
    (1, 2, answer("a", next="c"), "a", True),         # the report goes on
    (1, 2, answer("d"), "c", False),
    (0, 1, answer("a"), "a", False),                  # a spawn without bounded reports never says next
])
def test_when_a_poll_needs_another_request(index, pages, report, after, expected):
    assert poll_pages.more(index, pages, report, after) is expected


@pytest.mark.parametrize("report, after", [(answer(next="b"), "c"), (answer(next="c"), "c")])
def test_a_report_cursor_that_does_not_advance_fails_the_poll(report, after):
    with pytest.raises(PagingError):
        poll_pages.more(1, 1, report, after)


def test_answers_merge_into_one_report_with_the_later_status_of_a_repeated_id():
    first = answer("a", "b", next="b")
    last = StatusReport(node_id="n", boot_id="b1", attached=True, sources=7, rejected=("x",),
                        subscriptions=(SubscriptionStatus("b", "failed"), SubscriptionStatus("c", "running")))
    merged = poll_pages.merge([first, last])
    assert [(s.id, s.state) for s in merged.subscriptions] == [("a", "running"), ("b", "failed"), ("c", "running")]
    assert (merged.sources, merged.rejected, merged.next) == (7, ("x",), None)


def test_answers_from_two_boots_are_not_one_report():
    with pytest.raises(PagingError):
        poll_pages.merge([answer("a", next="a"), answer("b", boot="b2")])


def test_a_paged_poll_round_trips_and_a_paged_list_is_an_object():
    poll = Poll("n", ("a",), page=PollPage("r", 1, 3), report=ReportPage("a", 5))
    body = poll.to_dict()
    assert body["assigned"] == {"ids": ["a"], "round": "r", "page": 1, "pages": 3}
    assert Poll.from_dict(body) == poll
    report = answer("a", next="a")
    assert StatusReport.from_dict(report.to_dict()) == report
    assert "next" not in answer("a").to_dict()


def tokened(*ids, token="t2", delta=False, removed=(), boot="b1"):
    return StatusReport(node_id="n", boot_id=boot, attached=True,
                        subscriptions=tuple(SubscriptionStatus(i, "failed") for i in ids), token=token,
                        delta=delta, removed=tuple(removed))


KNOWN = {i: SubscriptionStatus(i, "running") for i in ("a", "b", "c")}


@pytest.mark.parametrize("answers, known, expected", [
    # a whole report replaces what was known
    ([tokened("a"), tokened("d")], KNOWN, {"a": "failed", "d": "failed"}),
    # a delta applies to it: changed statuses, ids gone
    ([tokened("b", delta=True, removed=["c"]), tokened("e", delta=True)], KNOWN,
     {"a": "running", "b": "failed", "e": "failed"}),
    ([tokened(delta=True)], KNOWN, {"a": "running", "b": "running", "c": "running"}),
])
def test_a_delta_applies_to_the_report_its_poll_named(answers, known, expected):
    report = poll_pages.merge(answers, known)
    assert {s.id: s.state for s in report.subscriptions} == expected
    assert (report.token, report.delta) == ("t2", False)        # the merged report is whole
    assert KNOWN["b"].state == "running"                        # what was known is not changed in place


@pytest.mark.parametrize("answers, known", [
    ([tokened("a", delta=True)], None),                             # a delta for a poll that named no report
    ([tokened("a", token="t2"), tokened("b", token="t3")], KNOWN),  # pages of two reports
])
def test_answers_that_are_not_one_view_fail_the_poll(answers, known):
    with pytest.raises(PagingError):
        poll_pages.merge(answers, known)


@pytest.mark.parametrize("after, report, expected", [
    (None, answer("a", next="c"), "c"),          # the report goes on from where the spawn said
    ("c", answer("d", next="f"), "f"),
    ("f", answer("g"), "f"),                      # whole: later requests ask from past what was read
    (None, answer("a", "b"), "b"),                # whole in one answer: from its last id, not from nothing
    (None, answer(), ""),                         # nothing reported: from before every id, never None
])
def test_the_report_cursor_of_the_next_request(after, report, expected):
    assert poll_pages.cursor(after, report) == expected


def test_a_poll_names_what_is_assigned_and_the_copies_the_hub_will_drop_itself():
    from blackwidow.store.coordination import AssignmentView
    assignments = {"a": AssignmentView("n1", True, None), "b": AssignmentView("n2", True, None),
                   "c": AssignmentView("n2", False, None)}
    reported = {"n1": ["a", "b", "gone"],          # "b" moved to n2: named on n1 until the hub drops it
                "n2": ["c", "d"],                  # "d" exists, unassigned (disabled): dropped by the hub
                "n3": ["gone"]}                    # a subscription deleted: left to the orphan timer
    lists = poll_pages.named(assignments, reported, existing={"a", "b", "c", "d"})
    assert {n: sorted(ids) for n, ids in lists.items()} == {"n1": ["a", "b"], "n2": ["b", "c", "d"]}


def test_reported_specs_equal_to_the_snapshots_share_its_field_dict():
    from blackwidow.store.coordination import SubscriptionView
    from shared.wire import SubscriptionSpec
    spec = SubscriptionSpec(id="sub-a", source_uuid="s", tenant_id="t", wiki="w", title="A")
    subs = {"sub-a": SubscriptionView("sub-a", spec, True, "running", "n", 0, None, None, page_key="page-1")}
    # built at run time, as a parsed answer's strings are: equal to the snapshot's, not the same objects
    same = SubscriptionStatus("".join(["sub-", "a"]), "running", spec=spec.to_dict(),
                              page_key="".join(["page-", "1"]))
    other = SubscriptionStatus("sub-a", "running", spec={**spec.to_dict(), "quota": 5})
    unknown = SubscriptionStatus("z", "running", spec={"id": "z"})
    shared = poll_pages.sharing_snapshot(answer(), subs)
    assert shared.subscriptions == ()
    report = StatusReport(node_id="n", boot_id="b", attached=True, subscriptions=(same, other, unknown))
    out = poll_pages.sharing_snapshot(report, subs).subscriptions
    assert out == (same, other, unknown)                     # equal by value, as reported
    assert out[0].spec is vars(spec) and out[1].spec is other.spec and out[2].spec is unknown.spec
    # the snapshot's own strings, not the parsed copies
    assert out[0].id is subs["sub-a"].id and out[0].page_key is subs["sub-a"].page_key
    assert same.id is not subs["sub-a"].id and same.page_key is not subs["sub-a"].page_key
