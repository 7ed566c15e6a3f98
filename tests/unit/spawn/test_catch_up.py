"""spawn.catch_up: reading a wiki on from its dump with list=allrevisions. Answers recorded in the shape MediaWiki
1.39 gives (formatversion 2); `responses` stands in for the wiki, the SQLite store is real."""
import threading
from datetime import datetime, timezone

import pytest
import responses

from shared.dump_wire import CatchUpDuty
from shared.http import make_session
from shared.revisions.sqlite_store import SQLiteRevisionStore
from spawn.catch_up import CatchUpReader, CatchUpReaders, parse_batch
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import BadResponse, MediaWikiClient

API = "https://wiki.test/w/api.php"
WIKI = "wiki.test"


def rev(revid: int, parent: int, ts: str, **extra) -> dict:
    return {"revid": revid, "parentid": parent, "timestamp": ts, "minor": False, "user": "Ann", "userid": 7,
            "size": 10 * revid, "sha1": f"{revid:040x}", "comment": f"edit {revid}", "tags": [],
            "slots": {"main": {"contentmodel": "wikitext"}}, **extra}


def answer(pages: list[tuple[int, str, list[dict]]], cont: str | None, now: str = "2026-11-25T08:00:00Z") -> dict:
    body: dict = {"batchcomplete": True, "curtimestamp": now,
                  "query": {"allrevisions": [{"pageid": pid, "ns": 0, "title": title, "revisions": revs}
                                             for pid, title, revs in pages]}}
    if cont is not None:
        body["continue"] = {"arvcontinue": cont, "continue": "-||"}
    return body


@pytest.fixture
def store(tmp_path):
    s = SQLiteRevisionStore(str(tmp_path / "revisions.db"))
    yield s
    s.close()


def client() -> MediaWikiClient:
    return MediaWikiClient(make_session("CatchUpTests/1.0 (tests@example.org)"), API, limiter=HostLimiter(0.0),
                           maxlag=5, timeout=(1.0, 1.0))


def duty(**kw) -> CatchUpDuty:
    return CatchUpDuty(set_id="s1", wiki=API, since="2026-01-01T00:00:00Z", interval_s=0.05, **kw)


def test_a_batch_is_grouped_by_page_oldest_first():
    body = answer([(2, "B", [rev(12, 0, "2026-01-02T00:00:00Z")]),
                   (1, "A", [rev(13, 11, "2026-01-03T00:00:00Z"), rev(11, 0, "2026-01-01T00:00:00Z")])], "x")
    pages, more, now = parse_batch(body, WIKI, False)
    assert [[r.rev_id for r in page] for page in pages] == [[11, 13], [12]]
    assert more == {"arvcontinue": "x", "continue": "-||"} and now == datetime(2026, 11, 25, 8, tzinfo=timezone.utc)


@pytest.mark.parametrize("body", [{"query": {}}, {"query": {"allrevisions": [{"pageid": 1}]}},
                                  {"query": {"allrevisions": []}, "continue": "no"}])
def test_a_malformed_answer_is_refused_whole(body):
    with pytest.raises(BadResponse):
        parse_batch(body, WIKI, False)


@responses.activate
def test_reads_from_the_dump_date_writes_each_batch_and_then_is_caught_up(store):
    calls = responses.add(responses.GET, API, json=answer(
        [(1, "A", [rev(11, 0, "2026-01-01T00:00:00Z"), rev(12, 11, "2026-01-05T00:00:00Z")])], "20260105000000|12"))
    responses.add(responses.GET, API, json=answer([(2, "B", [rev(20, 0, "2026-02-01T10:00:00Z")])], None))
    reader = CatchUpReader(duty(), client(), store)
    assert reader.read_once() is False
    first, second = (c.request.params for c in responses.calls)
    assert (first["list"], first["arvdir"], first["arvstart"]) == ("allrevisions", "newer", "2026-01-01T00:00:00Z")
    assert second["arvcontinue"] == "20260105000000|12"
    assert calls.call_count == 1
    assert sorted(r.rev_id for r in store.revisions(WIKI)) == [11, 12, 20]
    report = reader.report()
    assert (report.position, report.caught_up_to, report.revisions, report.requests, report.error) == (
        "2026-02-01T10:00:00Z", "2026-11-25T08:00:00Z", 3, 2, None)


@responses.activate
def test_a_restarted_reader_resumes_at_its_position_inclusive(store):
    responses.add(responses.GET, API, json=answer([], None))
    CatchUpReader(duty(position="2026-02-01T10:00:00Z"), client(), store).read_once()
    assert responses.calls[0].request.params["arvstart"] == "2026-02-01T10:00:00Z"


@responses.activate
def test_a_failed_request_is_reported_and_nothing_moves(store):
    responses.add(responses.GET, API, json={"error": {"code": "readapidenied", "info": "You need read permission"}})
    readers = CatchUpReaders(lambda wiki, identity: client(), store, join_s=1.0)
    readers.apply([duty()])
    try:
        reports: dict = {}

        def failed() -> bool:
            reports.update(readers.reports())
            return reports.get("s1") is not None and reports["s1"].error is not None
        deadline = threading.Event()
        for _ in range(100):
            if failed() or deadline.wait(0.05):
                break
        report = reports["s1"]
        assert "readapidenied" in report.error and report.position == "2026-01-01T00:00:00Z"
        assert report.caught_up_to is None and list(store.revisions(WIKI)) == []
    finally:
        readers.stop()
    assert readers.reports() == {}


@responses.activate
def test_a_set_no_longer_named_is_stopped(store):
    responses.add(responses.GET, API, json=answer([], None))
    readers = CatchUpReaders(lambda wiki, identity: client(), store, join_s=1.0)
    readers.apply([duty()])
    assert set(readers.reports()) == {"s1"}
    readers.apply([])
    assert readers.reports() == {}


@responses.activate
def test_a_namespace_set_reads_only_its_namespaces(store):
    responses.add(responses.GET, API, json=answer([], None))
    CatchUpReader(duty(namespaces=(0, 4)), client(), store).read_once()
    assert responses.calls[0].request.params["arvnamespace"] == "0|4"
