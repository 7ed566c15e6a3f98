"""spawn.catch_up: reading a wiki on from its dump with list=allrevisions and its deletion log. Answers recorded in
the shape MediaWiki 1.39 gives (formatversion 2); `responses` stands in for the wiki, the SQLite store is real."""
import threading
from datetime import datetime, timezone

import pytest
import responses

from shared.dump_wire import CatchUpDuty
from shared.http import make_session
from shared.revisions.sqlite_store import SQLiteRevisionStore
from spawn.catch_up import CatchUpReader, CatchUpReaders, parse_batch, past_edge
from spawn.host_limiter import HostLimiter
from spawn.mediawiki import BadResponse, MediaWikiClient

API = "https://wiki.test/w/api.php"
WIKI = "wiki.test"


def rev(revid: int, parent: int, ts: str, **extra) -> dict:
    return {"revid": revid, "parentid": parent, "timestamp": ts, "minor": False, "user": "Ann", "userid": 7,
            "size": 10 * revid, "sha1": f"{revid:040x}", "comment": f"edit {revid}", "tags": [],
            "slots": {"main": {"contentmodel": "wikitext"}}, **extra}


def answer(pages: list[tuple[int, str, list[dict]]], cont: str | None, now: str = "2026-11-25T08:00:00Z", *,
           logged: list[dict] | None = None, log_cont: str | None = None) -> dict:
    body: dict = {"batchcomplete": True, "curtimestamp": now,
                  "query": {"allrevisions": [{"pageid": pid, "ns": 0, "title": title, "revisions": revs}
                                             for pid, title, revs in pages], "logevents": logged or []}}
    more = {k: v for k, v in (("arvcontinue", cont), ("lecontinue", log_cont)) if v is not None}
    if more:
        body["continue"] = {**more, "continue": "-||"}
    return body


def logged(action: str, page_id: int, title: str, ts: str, logid: int, kind: str = "delete", **params) -> dict:
    """A log entry as list=logevents gives it (leprop ids|title|type|timestamp|details)."""
    return {"logid": logid, "ns": 0, "title": title, "pageid": page_id, "logpage": page_id, "params": params,
            "type": kind, "action": action, "timestamp": ts}


def visibility(**hidden: bool) -> dict:
    return {"bitmask": 0, "content": False, "comment": False, "user": False, "restricted": False, **hidden}


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
    batch = parse_batch(body, WIKI, False)
    assert [[r.rev_id for r in page] for page in batch.pages] == [[11, 13], [12]]
    assert batch.more == {"arvcontinue": "x", "continue": "-||"}
    assert batch.now == datetime(2026, 11, 25, 8, tzinfo=timezone.utc) and batch.log_done


@pytest.mark.parametrize("body", [{"query": {}}, {"query": {"allrevisions": [{"pageid": 1}]}},
                                  {"query": {"allrevisions": []}, "continue": "no"},
                                  {"query": {"allrevisions": [], "logevents": {}}}])
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
    assert (first["list"], first["arvdir"], first["arvstart"]) == ("allrevisions|logevents", "newer",
                                                                   "2026-01-01T00:00:00Z")
    assert (first["ledir"], first["lestart"]) == ("newer", "2026-01-01T00:00:00Z") and "letype" not in first
    assert second["arvcontinue"] == "20260105000000|12"
    assert calls.call_count == 1
    assert sorted(r.rev_id for r in store.revisions(WIKI)) == [11, 12, 20]
    report = reader.report()
    assert (report.position, report.caught_up_to, report.revisions, report.requests, report.error) == (
        "2026-02-01T10:00:00Z", "2026-11-25T08:00:00Z", 3, 2, None)


T0, T1 = datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 1, 2, tzinfo=timezone.utc)


@pytest.mark.parametrize("batch, position, edge, kept, after, after_edge", [
    ([], T0, frozenset(), [], T0, frozenset()),                                     # nothing read
    ([[(1, T0)]], T0, frozenset(), [1], T0, frozenset({1})),                        # new at the position
    ([[(1, T0)]], T0, frozenset({1}), [], T0, frozenset({1})),                      # written already
    ([[(1, T0), (2, T0)]], T0, frozenset({1}), [2], T0, frozenset({1, 2})),         # one more in that second
    ([[(1, T0), (3, T1)], [(4, T1)]], T0, frozenset({1}), [3, 4], T1, frozenset({3, 4})),  # a later second
    ([[(1, T0)]], T1, frozenset({1}), [1], T1, frozenset({1})),                     # older (an id unknown there)
])
def test_past_edge_writes_a_second_s_revisions_once(batch, position, edge, kept, after, after_edge):
    pages = [[parse_batch(answer([(9, "P", [rev(i, 0, ts.strftime("%Y-%m-%dT%H:%M:%SZ"))])], None), WIKI,
                          False).pages[0][0] for i, ts in page] for page in batch]
    fresh, moved, written = past_edge(pages, position, edge)
    assert ([r.rev_id for page in fresh for r in page], moved, written) == (kept, after, after_edge)


@responses.activate
def test_a_following_reader_counts_and_writes_its_last_second_once(store):
    responses.add(responses.GET, API, json=answer([(1, "A", [rev(11, 0, "2026-01-05T00:00:00Z")])], None))
    responses.add(responses.GET, API, json=answer([(1, "A", [rev(11, 0, "2026-01-05T00:00:00Z")])], None))
    responses.add(responses.GET, API, json=answer([(1, "A", [rev(11, 0, "2026-01-05T00:00:00Z"),
                                                             rev(12, 11, "2026-01-05T00:00:00Z")])], None))
    reader = CatchUpReader(duty(), client(), store)
    for _ in range(3):
        reader.read_once()
    assert [c.request.params["arvstart"] for c in responses.calls] == [
        "2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-05T00:00:00Z"]
    assert (reader.report().revisions, sorted(r.rev_id for r in store.revisions(WIKI))) == (2, [11, 12])


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


@responses.activate
def test_the_deletion_log_hides_deletes_and_restores_in_the_store(store):
    """Revision deletion hides the logged fields, a page deletion marks the page and drops its texts, an undeletion
    reads the page's whole history again (its revisions come back behind the position) and lifts the mark."""
    a = [rev(11, 0, "2026-01-01T00:00:00Z"), rev(12, 11, "2026-01-05T00:00:00Z")]
    responses.add(responses.GET, API, json=answer([(1, "A", a), (2, "B", [rev(20, 0, "2026-01-06T00:00:00Z")])],
                                                  None, "2026-01-07T00:00:00Z"))
    reader = CatchUpReader(duty(), client(), store)
    reader.read_once()
    responses.replace(responses.GET, API, json=answer([], None, "2026-01-09T00:00:00Z", logged=[
        logged("revision", 1, "A", "2026-01-08T00:00:00Z", 5, type="revision", ids=[12], old=visibility(),
               new=visibility(content=True, comment=True)),
        logged("delete", 2, "B", "2026-01-08T01:00:00Z", 6)]))
    reader.read_once()
    hidden = {r.rev_id: r for r in store.history(WIKI, 1)}[12]
    assert (hidden.text_hidden, hidden.comment_hidden, hidden.comment, hidden.user_hidden) == (True, True, None, False)
    assert store.page(WIKI, 2).deleted

    history = {"batchcomplete": True, "query": {"pages": [{"pageid": 2, "ns": 0, "title": "B", "revisions": [
        rev(19, 0, "2025-12-01T00:00:00Z"), rev(20, 19, "2026-01-06T00:00:00Z")]}]}}
    responses.replace(responses.GET, API, json=answer([], None, "2026-01-10T00:00:00Z", logged=[
        logged("restore", 2, "B", "2026-01-09T12:00:00Z", 7, count={"revisions": 2, "files": 0})]))
    responses.add(responses.GET, API, json=history)
    reader.read_once()
    restore = responses.calls[-1].request.params
    assert (restore["prop"], restore["pageids"]) == ("revisions", "2")
    assert sorted(r.rev_id for r in store.history(WIKI, 2)) == [19, 20]
    assert not store.page(WIKI, 2).deleted
    report = reader.report()
    assert report.requests == 4 and report.position == "2026-01-06T00:00:00Z"   # the newest revision read


@responses.activate
def test_the_reported_position_waits_for_the_log(store, monkeypatch):
    """A read cut short while the log has more reports the log's position when it is the earlier one: a reader that
    starts again from there misses no log entry (and reads a few revisions twice, which changes nothing)."""
    monkeypatch.setattr("spawn.catch_up.MAX_BATCHES", 1)
    responses.add(responses.GET, API, json=answer(
        [(1, "A", [rev(11, 0, "2026-03-01T00:00:00Z")])], "20260301000000|11", "2026-03-02T00:00:00Z",
        logged=[logged("delete", 9, "Gone", "2026-02-01T00:00:00Z", 3)], log_cont="20260201000000|3"))
    reader = CatchUpReader(duty(), client(), store)
    assert reader.read_once() is True
    assert reader.report().position == "2026-02-01T00:00:00Z"

    # the log read whole in a request of its own: its position is that request's clock, and the revisions' holds
    responses.replace(responses.GET, API, json=answer([], None, "2026-03-05T00:00:00Z"))
    assert reader.read_once() is False
    assert reader.report().position == "2026-03-01T00:00:00Z"


@responses.activate
def test_imports_and_merges_read_the_history_again_and_a_half_shown_entry_is_skipped(store):
    """Revisions that appear behind the position: an import reads its page's history again by id, a history merge
    its destination's by title. An entry the wiki shows in part is passed over, not fetched again forever."""
    old = rev(5, 0, "2003-01-01T00:00:00Z")
    responses.add(responses.GET, API, json=answer([], None, "2026-01-10T00:00:00Z", logged=[
        logged("upload", 1, "A", "2026-01-08T00:00:00Z", 8, kind="import", count=1),
        logged("merge", 2, "B", "2026-01-08T01:00:00Z", 9, kind="merge", dest_ns=0, dest_title="C",
               mergepoint="2026-01-01T00:00:00Z"),
        {"logid": 10, "ns": 0, "pageid": 3, "type": "delete", "action": "delete", "timestamp": "2026-01-08T02:00:00Z",
         "titlehidden": True}]))
    responses.add(responses.GET, API, json={"batchcomplete": True, "query": {"pages": [
        {"pageid": 1, "ns": 0, "title": "A", "revisions": [old]}]}})
    # the destination's history in two batches: the first with the title's resolution, the rest by page id
    opening = {"continue": {"rvcontinue": "20020201000000|7", "continue": "||"}, "query": {"pages": [
        {"pageid": 4, "ns": 0, "title": "C", "lastrevid": 7, "revisions": [rev(6, 0, "2002-01-01T00:00:00Z")]}]}}
    responses.add(responses.GET, API, json=opening)
    responses.add(responses.GET, API, json={"batchcomplete": True, "query": {"pages": [
        {"pageid": 4, "ns": 0, "title": "C", "revisions": [rev(7, 6, "2002-02-01T00:00:00Z")]}]}})
    reader = CatchUpReader(duty(), client(), store)
    assert reader.read_once() is False
    asked = [c.request.params for c in responses.calls[1:]]
    assert (asked[0]["pageids"], asked[1]["titles"], asked[2]["pageids"]) == ("1", "C", "4")
    assert sorted(r.rev_id for r in store.revisions(WIKI)) == [5, 6, 7]
    assert reader.report().requests == 4 and reader.report().error is None
