"""spawn.census: the proof, shard by shard, that a set's stored history equals the wiki's. Pure rules by table;
the steps against answers in MediaWiki 1.39's shape (`responses` stands in for the wiki), the SQLite store real."""
import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Callable
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from shared.census_wire import ShardDuty, listing_key, shard_of
from shared.dump_wire import wire_time
from shared.revisions.sqlite_store import SQLiteRevisionStore
from spawn.catch_up import CatchUpReader
from spawn.census import Census, compare, due, parse_listing, proof, prove_shard
from spawn.mediawiki import BadResponse
from tests.unit.spawn.test_catch_up import API, WIKI, answer, client, duty, rev

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
CUT = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize("after, finished, now, want", [
    (None, None, T0, True),                                         # the first census: at once
    (T0 + timedelta(hours=1), None, T0, False),                     # the hub's next one is later
    (T0 - timedelta(hours=1), None, T0, True),
    (None, T0 - timedelta(seconds=30), T0, False),                  # this reader's own, not yet heard of
    (None, T0 - timedelta(seconds=61), T0, True),
    (T0 - timedelta(hours=1), T0 - timedelta(seconds=30), T0, False),
])
def test_when_a_census_starts(after, finished, now, want):
    assert due(now=now, after=after, finished_at=finished, every_s=60.0) is want


@pytest.mark.parametrize("listed, stored, missing, extra", [
    ([1, 2, 3], [1, 2, 3], (), ()),
    ([1, 2, 3], [1, 3], (2,), ()),
    ([1, 3], [1, 2, 3], (), (2,)),
    ([], [5], (), (5,)),
    ([4, 4], [4], (), ()),          # an id the listing repeats counts once
])
def test_a_page_comparison(listed, stored, missing, extra):
    c = compare(listed, stored)
    assert (c.missing, c.extra) == (missing, extra)


def test_a_shard_is_proven_only_when_equal_and_nothing_extra():
    assert proof(3, {1: [1, 2], 2: [3]}, {1: [1, 2], 2: [3]}, 0).proven
    missing = proof(3, {1: [1, 2], 2: [3]}, {1: [1]}, 0)
    assert (missing.wiki, missing.stored, missing.missing, missing.missing_ids, missing.proven) == \
        (3, 1, 2, (2, 3), False)
    extra = proof(3, {1: [1, 2]}, {1: [1, 2, 9]}, 0)
    assert (extra.extra, extra.extra_ids, extra.proven) == (1, (9,), False)


def test_shards_are_stable_and_spread():
    counts = [0] * 16
    for page_id in range(1, 16001):
        counts[shard_of(page_id, 16)] += 1
    assert shard_of(12345, 16) == shard_of(12345, 16) and min(counts) > 800 and max(counts) < 1200


@pytest.mark.parametrize("body", [{"query": {}}, {"query": {"allrevisions": [{"pageid": 1}]}},
                                  {"query": {"allrevisions": [{"pageid": 1, "revisions": [{}]}]}},
                                  {"query": {"allrevisions": []}, "continue": "no"}])
def test_a_malformed_listing_is_refused_whole(body):
    with pytest.raises(BadResponse):
        parse_listing(body)


def ids_answer(pages: dict[int, list[int]], cont: str | None) -> dict:
    body: dict = {"batchcomplete": True, "query": {"allrevisions": [
        {"pageid": pid, "ns": 0, "title": f"P{pid}", "revisions": [{"revid": r, "parentid": 0} for r in ids]}
        for pid, ids in pages.items()]}}
    if cont:
        body["continue"] = {"arvcontinue": cont, "continue": "-||"}
    return body


def by_id_answer(pages: dict[int, list[dict]]) -> dict:
    return {"batchcomplete": True, "query": {"pages": [
        {"pageid": pid, "ns": 0, "title": f"P{pid}", "revisions": revs} for pid, revs in pages.items()]}}


@pytest.fixture
def store(tmp_path):
    s = SQLiteRevisionStore(str(tmp_path / "revisions.db"))
    yield s
    s.close()


def stored(store, page_id: int, *revs: dict) -> None:
    from spawn.mediawiki import revision_from_api
    store.write([revision_from_api(WIKI, {"pageid": page_id, "ns": 0, "title": f"P{page_id}"}, r, False)
                 for r in revs])


def listing_and_repairs(stored_in) -> tuple[list[dict], Callable]:
    """A wiki of pages 1–4 whose revisions 14 and 15 the store misses and whose 41 it does not list; the callback
    answers the listing and the repairs, recording each request."""
    stored(stored_in, 1, rev(11, 0, "2026-01-01T00:00:00Z"), rev(13, 11, "2026-02-01T00:00:00Z"))
    stored(stored_in, 2, rev(12, 0, "2026-01-02T00:00:00Z"))
    stored(stored_in, 4, rev(40, 0, "2026-01-03T00:00:00Z"), rev(41, 40, "2026-01-04T00:00:00Z"))
    stored(stored_in, 1, rev(19, 13, "2026-06-01T00:00:00Z"))        # after the cut: not compared
    listing = [ids_answer({1: [11], 2: [12]}, "a"), ids_answer({1: [13], 2: [14], 3: [15], 4: [40]}, None)]
    repairs = by_id_answer({2: [rev(14, 12, "2026-02-02T00:00:00Z")], 3: [rev(15, 0, "2026-02-03T00:00:00Z")]})
    asked: list[dict] = []

    def answer_for(request):
        q = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        asked.append(q)
        if q.get("list") == "allrevisions":
            assert (q["arvprop"], q["arvdir"], q["arvend"]) == ("ids", "newer", "2026-03-01T12:00:00Z")
            return 200, {}, json.dumps(listing[1 if "arvcontinue" in q else 0])
        assert set(q["revids"].split("|")) <= {"14", "15"}
        return 200, {}, json.dumps(repairs)
    return asked, answer_for


def shard_duty(census: Census, shard: int) -> ShardDuty:
    return ShardDuty(set_id=census.set_id, started_at=wire_time(census.started_at), wiki=API, cut=wire_time(CUT),
                     shard=shard, shard_count=census.shards)


@responses.activate
def test_a_census_lists_into_the_store_and_each_shard_is_proven_apart(store):
    asked, answer_for = listing_and_repairs(store)
    responses.add_callback(responses.GET, API, callback=answer_for, content_type="application/json")
    census = Census("set", WIKI, CUT, 4, T0, store)
    assert census.step(client()) is False               # two requests: whole in one step
    report = census.report()
    assert (report.listed_whole, report.listed, report.requests, report.finished_at) == (True, 6, 2, None)
    assert census.step(client()) is False and len(asked) == 2       # nothing more to list
    # any node proves any shard from what the store holds (each shard alone, in any order)
    proofs = {n: prove_shard(shard_duty(census, n), client(), store) for n in (3, 1, 0, 2)}
    by_page_shard = {pid: shard_of(pid, 4) for pid in (1, 2, 3, 4)}
    # every page's shard shows its pages and revisions; 14 and 15 were missing and are written now
    assert sum(p.wiki for p in proofs.values()) == 6 == sum(p.stored for p in proofs.values())
    assert sum(p.repaired for p in proofs.values()) == 2 and sum(p.pages for p in proofs.values()) == 4
    # page 4's revision 41 is stored, not listed by the wiki: its shard stays unproven and names it
    shard4 = proofs[by_page_shard[4]]
    assert (shard4.extra, shard4.extra_ids, shard4.proven) == (1, (41,), False)
    assert all(p.proven for n, p in proofs.items() if n != by_page_shard[4])
    assert [r.rev_id for r in store.history(WIKI, 3)] == [15] and 14 in [r.rev_id for r in store.history(WIKI, 2)]
    # a repair request per shard with something missing, counted by its shard
    repairing = {by_page_shard[2], by_page_shard[3]}
    assert {n for n, p in proofs.items() if p.requests} == repairing
    assert len(asked) == 2 + len(repairing) == 2 + sum(p.requests for p in proofs.values())
    # proven again: nothing more to write
    again = prove_shard(shard_duty(census, by_page_shard[3]), client(), store)
    assert (again.repaired, again.requests, again.proven) == (0, 0, True)
    census.close()
    assert all(store.listing(WIKI, census.key, n) == {} for n in range(4))


@responses.activate
def test_the_reader_lists_once_caught_up_and_lets_go_when_the_hub_holds_it_finished(store):
    stored(store, 1, rev(11, 0, "2026-01-01T00:00:00Z"))

    def answer_for(request):
        q = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        if q.get("list") == "allrevisions":
            return 200, {}, json.dumps(ids_answer({1: [11]}, None))
        return 200, {}, json.dumps(answer([], None, now="2026-03-01T12:00:00Z"))
    responses.add_callback(responses.GET, API, callback=answer_for, content_type="application/json")

    reader = CatchUpReader(duty(census_shards=2), client(), store)
    assert reader.read_once() is False and reader.report().census is None
    assert reader.census_step() is False            # listed whole in one step
    census = reader.report().census
    assert census is not None and census.listed_whole and census.finished_at is None
    assert census.cut == "2026-03-01T12:00:00Z" and census.listed == 1 and census.shards == ()
    key = listing_key(reader.duty.set_id, census.started_at)
    assert sum(len(store.listing(WIKI, key, n)) for n in range(2)) == 1
    # the shards are proven elsewhere: the reader waits, its report unchanged
    assert reader.census_step() is False and reader.report().census == census
    # the hub holds it finished: the listing goes, and none starts again before its interval
    reader.retune(replace(reader.duty, census_closed=census.started_at))
    assert reader.census_step() is False and reader.report().census is None
    assert all(store.listing(WIKI, key, n) == {} for n in range(2))
    assert reader.census_step() is False and reader.report().census is None


def test_no_census_without_shards_or_before_caught_up(store):
    reader = CatchUpReader(duty(census_shards=0), client(), store)
    assert reader.census_step() is False
    reader = CatchUpReader(duty(census_shards=4), client(), store)
    assert reader.census_step() is False            # not caught up: no cut yet
