"""Dump files read as the hub's duties say (spawn.dump_duties): generated XML served with `responses`, a real
SQLite store, and a store whose writes wait at a gate where a test must hold an ingest mid-file."""
from __future__ import annotations

import logging
import threading
import time

import pytest
import requests
import responses

from shared.dump_wire import DumpDuty, Resume
from shared.revisions.sqlite_store import SQLiteRevisionStore
from shared.revisions.store import StoreError
from shared.wire import Poll, ReportPage
from spawn.dump_duties import DumpRunners, ended, expected_site
from spawn.dump_rows import ExpectedSite
from spawn.metrics import SpawnMetrics
from spawn.node import Node
from tests.unit.spawn.test_dump_ingest import dump_xml, page_xml, pages
from tests.unit.spawn.test_node import FakeHub
from tests.unit.spawn.test_registry import Harness, spec

API = "https://gen.example.org/w/api.php"      # the host the generated dumps' <base> names
KEY = "gen.example.org"
URL = "https://dumps.test/genwiki/part{}.xml"


def duty(n: int = 1, resume: Resume = Resume(), **kw) -> DumpDuty:
    return DumpDuty(**{"file_id": f"f{n}", "set_id": "set", "url": URL.format(n), "wiki": API, "resume": resume,
                       **kw})


def serve(n: int, first: int, count: int) -> None:
    responses.get(URL.format(n), body=dump_xml(pages(first, count)), auto_calculate_content_length=True)


def eventually(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def finished(runners: DumpRunners, file_id: str):
    return eventually(lambda: (r := runners.reports().get(file_id)) is not None and r.state != "reading" and r)


@pytest.fixture
def store(tmp_path):
    s = SQLiteRevisionStore(str(tmp_path / "r.db"))
    yield s
    s.close()


class Gate:
    """Passes writes to a real store once `open` is set; `entered` says a write is waiting."""

    def __init__(self, inner):
        self.inner, self.entered, self.open, self.calls = inner, threading.Event(), threading.Event(), 0

    def write_pages(self, rows):
        self.calls += 1
        self.entered.set()
        self.open.wait(10)
        self.inner.write_pages(rows)


@pytest.fixture
def runners_of():
    made: list[DumpRunners] = []

    def make(store, **kw) -> DumpRunners:
        runners = DumpRunners(store, requests.Session(), SpawnMetrics(), **kw)
        made.append(runners)
        return runners
    yield make
    for runners in made:
        runners.stop()


def page_ids(store) -> set[int]:
    return {r.page_id for r in store.revisions(KEY)}


@pytest.mark.parametrize("dbname, wiki, expected", [
    ("chwiki", "http://127.0.0.1:8080/w/api.php", ExpectedSite(dbname="chwiki")),
    (None, "https://Gen.Example.org:8443/w/api.php", ExpectedSite(host="gen.example.org")),
    (None, API, ExpectedSite(host="gen.example.org")),
])
def test_the_dbname_is_the_check_when_given_else_the_wikis_host(dbname, wiki, expected):
    assert expected_site(DumpDuty("f", "s", URL.format(1), wiki, dbname=dbname)) == expected


@pytest.mark.parametrize("state, stopped, error, out", [
    ("done", False, None, ("done", None)), ("done", True, None, ("done", None)),
    ("failed", False, "DumpCorrupt: x", ("failed", "DumpCorrupt: x")),
    ("stopped", True, None, ("stopped", None)), ("pending", True, None, ("stopped", None)),
    ("reading", False, "StoreError: disk full", ("failed", "StoreError: disk full")),
    ("reading", False, None, ("failed", "the ingest ended in state 'reading'")),
])
def test_how_an_ended_ingest_is_reported(state, stopped, error, out):
    assert ended(state, stopped, error) == out


@responses.activate
def test_a_duty_runs_to_done_and_reports_where_it_got(store, runners_of):
    serve(1, 1, 10)
    runners = runners_of(store)
    runners.apply([duty(1)])
    report = finished(runners, "f1")
    assert (report.state, report.resume, report.error) == ("done", Resume(10, 10, 30), None)
    assert report.revisions_read == 30 and report.bytes_read == report.bytes_total > 0
    assert report.revisions_per_s > 0 and report.bytes_per_s > 0
    assert page_ids(store) == set(range(1, 11))
    eventually(lambda: runners.metrics.dump_files.labels(outcome="done")._value.get() == 1)
    eventually(lambda: runners.metrics.dump_files_running._value.get() == 0)


@responses.activate
def test_a_resumed_duty_skips_the_pages_written_and_counts_on_from_the_resume_point(store, runners_of):
    serve(1, 1, 10)
    runners = runners_of(store)
    runners.apply([duty(1, Resume(pages=4, last_page_id=4, revisions=12))])
    report = finished(runners, "f1")
    assert (report.state, report.resume) == ("done", Resume(10, 10, 30))       # cumulative, as if read here whole
    assert report.revisions_read == 18                                          # this run's figure
    assert page_ids(store) == set(range(5, 11))         # the pages another node wrote are not written again


class HoldAfter:
    """Passes `allowed` writes to a real store, then holds the next until `open` is set."""

    def __init__(self, inner, allowed: int):
        self.inner, self.allowed, self.held, self.open = inner, allowed, threading.Event(), threading.Event()

    def write_pages(self, rows):
        if self.allowed == 0:
            self.held.set()
            self.open.wait(10)
        self.allowed -= 1
        self.inner.write_pages(rows)


@responses.activate
def test_a_long_page_reports_its_written_parts_and_a_duty_resumes_after_them(store, runners_of):
    responses.get(URL.format(1), body=dump_xml(page_xml(1, 3) + page_xml(2, 12) + page_xml(3, 3)),
                  auto_calculate_content_length=True)
    holding = HoldAfter(store, allowed=2)           # page 1, then page 2's first part of 5; its second waits
    runners = runners_of(holding, batch=5)
    runners.apply([duty(1)])
    assert holding.held.wait(10)
    assert runners.reports()["f1"].resume == Resume(1, 1, 8, part_page_id=2, part_revisions=5)
    holding.open.set()
    assert finished(runners, "f1").resume == Resume(3, 3, 18)

    runners.stop()
    resumed = runners_of(CountingStore(store), batch=5)
    resumed.apply([duty(1, Resume(1, 1, 8, part_page_id=2, part_revisions=5))])
    assert finished(resumed, "f1").resume == Resume(3, 3, 18)
    assert resumed.store.written == [*range(205, 212), 300, 301, 302]   # type: ignore[attr-defined]


class CountingStore:
    """A real store that records the revision ids written through it."""

    def __init__(self, inner):
        self.inner, self.written = inner, []

    def write_pages(self, rows):
        self.inner.write_pages(rows)
        self.written.extend(r.rev_id for page in rows for r in page)


@responses.activate
def test_a_resume_point_the_file_does_not_match_fails_it(store, runners_of):
    serve(1, 1, 10)
    runners = runners_of(store)
    runners.apply([duty(1, Resume(pages=4, last_page_id=77, revisions=12))])
    report = finished(runners, "f1")
    assert report.state == "failed" and report.error.startswith("DumpCorrupt: ")
    assert report.resume == Resume(4, 77, 12) and page_ids(store) == set()


@responses.activate
def test_a_duty_no_longer_named_is_stopped_and_forgotten(store, runners_of):
    serve(1, 1, 20)
    gate = Gate(store)
    runners = runners_of(gate, batch=3)         # a page per write: the ingest waits at the gate mid-file
    runners.apply([duty(1)])
    eventually(gate.entered.is_set)
    assert runners.reports()["f1"].state == "reading"
    runners.apply([])
    assert runners.reports() == {}              # never reported again, while it stops and after
    gate.open.set()
    eventually(lambda: runners.metrics.dump_files.labels(outcome="stopped")._value.get() == 1)
    eventually(lambda: runners.metrics.dump_files_running._value.get() == 0)
    assert 0 < len(page_ids(store)) < 20
    runners.apply([duty(1)])                    # named again once forgotten: read again from the duty's resume
    assert finished(runners, "f1").resume == Resume(20, 20, 60)
    assert len(responses.calls) == 2


@responses.activate
def test_a_finished_duty_still_named_keeps_its_report_and_is_not_read_again(store, runners_of):
    serve(1, 1, 5)
    runners = runners_of(store)
    runners.apply([duty(1)])
    done = finished(runners, "f1")
    for _ in range(3):
        runners.apply([duty(1)])
    assert runners.reports()["f1"] == done and len(responses.calls) == 1
    runners.apply([])                           # the hub acknowledged it
    assert runners.reports() == {}
    runners.apply([duty(1, Resume(5, 5, 15))])
    assert finished(runners, "f1").resume == Resume(5, 5, 15) and len(responses.calls) == 2


@responses.activate
def test_an_unreachable_file_fails_with_the_named_error(store, runners_of):
    responses.get(URL.format(1), status=404)
    runners = runners_of(store)
    runners.apply([duty(1)])
    report = finished(runners, "f1")
    assert report.state == "failed" and report.error.startswith("DumpNotFound: ") and "404" in report.error
    runners.apply([duty(1)])
    assert runners.reports()["f1"] == report and len(responses.calls) == 1      # not retried while named


@responses.activate
def test_the_wrong_wiki_fails(store, runners_of):
    serve(1, 1, 2)
    runners = runners_of(store)
    runners.apply([duty(1, dbname="enwiki")])
    assert finished(runners, "f1").error.startswith("DumpWrongWiki: ")


class Broken:
    def write_pages(self, rows):
        raise StoreError("disk full")


@responses.activate
def test_any_other_failure_fails_the_file_and_is_logged(runners_of, caplog):
    serve(1, 1, 2)
    caplog.set_level(logging.ERROR)
    runners = runners_of(Broken())
    runners.apply([duty(1)])
    report = finished(runners, "f1")
    assert (report.state, report.error) == ("failed", "StoreError: disk full")
    assert "dump.crashed" in caplog.text and "Traceback" in caplog.text


def test_a_duty_no_ingest_can_be_made_of_fails_alone(store, runners_of):
    runners = runners_of(store)
    runners.apply([duty(1, wiki="https://gen.example.org:port/w/api.php")])
    assert finished(runners, "f1").error.startswith("ValueError: ")


@responses.activate
def test_at_most_max_running_files_are_read_at_once_in_the_order_named(store, runners_of):
    for n in (1, 2, 3):
        serve(n, 10 * n, 3)
    gate = Gate(store)
    runners = runners_of(gate, max_running=2)
    runners.apply([duty(3), duty(1), duty(2)])
    eventually(gate.entered.is_set)
    assert set(runners.reports()) == {"f3", "f1"}           # f2 waits: no report until it starts
    assert runners.metrics.dump_files_running._value.get() == 2
    gate.open.set()                                         # as each ends, the next named one starts
    reports = {f: finished(runners, f) for f in ("f1", "f2", "f3")}
    assert {f: r.state for f, r in reports.items()} == {"f1": "done", "f2": "done", "f3": "done"}
    assert page_ids(store) == {10, 11, 12, 20, 21, 22, 30, 31, 32}


@responses.activate
def test_a_waiting_duty_starts_when_a_running_one_is_no_longer_named(store, runners_of):
    serve(1, 1, 20)
    serve(2, 100, 2)
    gate = Gate(store)
    runners = runners_of(gate, batch=3)
    runners.apply([duty(1), duty(2)])
    eventually(gate.entered.is_set)
    runners.apply([duty(2)])
    assert runners.reports() == {}             # f1 still holds the slot until its ingest notices
    gate.open.set()
    assert finished(runners, "f2").state == "done"


@responses.activate
def test_stop_stops_every_ingest_and_forgets_every_file(store, runners_of):
    serve(1, 1, 20)
    serve(2, 100, 2)
    gate = Gate(store)
    runners = runners_of(gate, batch=3, max_running=2)
    runners.apply([duty(1), duty(2)])
    eventually(gate.entered.is_set)
    gate.open.set()
    runners.stop()
    assert runners.reports() == {}
    eventually(lambda: runners.metrics.dump_files_running._value.get() == 0)
    assert not [t for t in threading.enumerate() if t.name.startswith("dump-f")]


@responses.activate
def test_a_node_applies_dump_duties_on_a_polls_first_request_and_reports_them_on_the_first_page(store):
    serve(1, 1, 3)
    h = Harness()
    runners = DumpRunners(store, requests.Session(), SpawnMetrics())
    node = Node(h.registry, FakeHub(), advertise_url="http://127.0.0.1:9999", detach_after_s=15.0,
                clock=h.clock, dumps=runners)
    node.register_once()
    for sub_id in ("a", "b", "c"):
        node.put(spec(sub_id))
    assigned = ("a", "b", "c")
    node.heartbeat(Poll(node_id="node-1", assigned=assigned, dumps=(duty(1),), report=ReportPage(None, 2)))
    finished(runners, "f1")
    first = node.heartbeat(Poll(node_id="node-1", assigned=assigned, dumps=(duty(1),), report=ReportPage(None, 2)))
    assert first.dumps["f1"].state == "done" and first.next is not None
    # a later page carries no duties (the hub sends them on the first) and neither stops them nor reports them
    rest = node.heartbeat(Poll(node_id="node-1", assigned=assigned, report=ReportPage(first.next, 2)))
    assert rest.dumps == {} and set(runners.reports()) == {"f1"}
    assert node.report().dumps["f1"].resume == Resume(3, 3, 9)
    node.detach()
    assert runners.reports() == {} and node.report().dumps == {}


@responses.activate
def test_a_namespace_duty_writes_only_its_namespaces(store, runners_of):
    serve(1, 1, 4)          # generated pages are all in namespace 0
    runners = runners_of(store)
    runners.apply([duty(1, namespaces=(4,))])
    report = finished(runners, "f1")
    assert (report.state, report.resume.pages, report.resume.revisions) == ("done", 0, 0)
    assert page_ids(store) == set()
    runners.apply([])
    serve(2, 1, 4)
    runners.apply([duty(2, namespaces=(0, 4))])
    assert finished(runners, "f2").state == "done" and page_ids(store) == {1, 2, 3, 4}
