"""blackwidow.dump_plan: which node reads which dump file, and what its reports change. Tables, no I/O."""
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from blackwidow import census_plan, dump_plan
from blackwidow.decide import Rules, failed_retry_delay
from blackwidow.dump_plan import PENDING, READING, FileState
from shared.dump_wire import DONE, FAILED, DumpReport, Resume

AT = datetime(2026, 11, 25, 8, 0, tzinfo=timezone.utc)
RULES = Rules(node_failures=3, routing="modulo")
WIKI = "https://ch.wikipedia.org/w/api.php"


def retry(failures: int) -> float:
    return failed_retry_delay(failures, RULES)


def files(*specs: tuple[str, str, int], parallel: int = 2, **kw) -> dict[str, FileState]:
    """(file id, set id, position) -> a pending file."""
    return {fid: FileState(id=fid, set_id=sid, position=pos, url=f"https://dumps.test/{fid}.xml.bz2", wiki=WIKI,
                           parallel=parallel, **kw) for fid, sid, pos in specs}


def nodes_of(out: dict[str, FileState]) -> dict[str, str | None]:
    return {fid: f.node for fid, f in sorted(out.items())}


def test_files_start_in_list_order_up_to_the_sets_parallel_and_one_per_node():
    four = files(("a", "s", 0), ("b", "s", 1), ("c", "s", 2), ("d", "s", 3), parallel=2)
    out = dump_plan.placed(four, {"n1", "n2", "n3"}, AT)
    assert [fid for fid, node in nodes_of(out).items() if node] == ["a", "b"]
    assert len({out["a"].node, out["b"].node}) == 2            # one file per node
    assert {f.state for f in out.values()} == {READING, PENDING}


def test_per_node_bounds_files_on_a_node_and_sets_share_the_nodes():
    two_sets = files(("a", "s", 0), ("b", "s", 1), ("x", "t", 0), ("y", "t", 1), parallel=2)
    out = dump_plan.placed(two_sets, {"n1"}, AT, per_node=1)
    assert sum(node is not None for node in nodes_of(out).values()) == 1
    out = dump_plan.placed(two_sets, {"n1", "n2"}, AT, per_node=2)
    assert sorted(fid for fid, node in nodes_of(out).items() if node) == ["a", "b", "x", "y"]
    assert all(sum(f.node == n for f in out.values()) == 2 for n in ("n1", "n2"))


def test_a_file_on_a_live_node_stays_there_whatever_joins():
    start = dump_plan.placed(files(("a", "s", 0)), {"n1"}, AT)
    assert start["a"].node == "n1"
    assert dump_plan.placed(start, {"n1", "n2", "n3", "n4"}, AT)["a"].node == "n1"


def test_a_file_whose_node_is_gone_goes_elsewhere_keeping_its_resume_point():
    resume = Resume(pages=120, last_page_id=4410, revisions=3000)
    on_n1 = {"a": replace(files(("a", "s", 0))["a"], node="n1", state=READING, resume=resume)}
    out = dump_plan.placed(on_n1, {"n2"}, AT)
    assert (out["a"].node, out["a"].state, out["a"].resume) == ("n2", READING, resume)
    assert dump_plan.duties(out)["n2"][0].resume == resume
    assert dump_plan.placed(on_n1, set(), AT)["a"].node is None        # no node: it waits, pending


@pytest.mark.parametrize("state, enabled, retry_in_s, wanted", [
    (PENDING, True, None, True),
    (PENDING, False, None, False),          # the set is stopped
    (DONE, True, None, False),
    (FAILED, True, 30, False),              # backing off
    (FAILED, True, -1, True),               # its retry is due
])
def test_which_files_want_a_node(state, enabled, retry_in_s, wanted):
    retry_at = None if retry_in_s is None else AT + timedelta(seconds=retry_in_s)
    one = files(("a", "s", 0), state=state, enabled=enabled, retry_at=retry_at)
    assert (dump_plan.placed(one, {"n1"}, AT)["a"].node is not None) is wanted


def test_a_stopped_set_takes_its_files_off_their_nodes():
    reading = {"a": replace(files(("a", "s", 0))["a"], node="n1", state=READING, enabled=False)}
    out = dump_plan.placed(reading, {"n1"}, AT)
    assert (out["a"].node, out["a"].state) == (None, PENDING)
    assert dump_plan.duties(out) == {}


def _reading(**kw) -> dict[str, FileState]:
    return {"a": replace(files(("a", "s", 0))["a"], node="n1", state=READING, **kw)}


def test_reports_move_the_resume_point_forward_only_from_the_files_own_node():
    before = _reading(resume=Resume(10, 100, 50))
    ahead = DumpReport("a", "reading", resume=Resume(20, 200, 90), bytes_read=5000)
    behind = DumpReport("a", "reading", resume=Resume(5, 50, 20))
    out = dump_plan.absorbed(before, {"n1": {"a": ahead}}, AT, retry)
    assert (out["a"].resume, out["a"].report, out["a"].reported_at) == (Resume(20, 200, 90), ahead, AT)
    assert dump_plan.absorbed(before, {"n1": {"a": behind}}, AT, retry)["a"].resume == Resume(10, 100, 50)
    assert dump_plan.absorbed(before, {"n2": {"a": ahead}}, AT, retry) == before     # not its node
    assert dump_plan.absorbed(before, {"n1": {}}, AT, retry) == before               # not started there yet


@pytest.mark.parametrize("held, heard, kept", [
    (Resume(10, 100, 50), Resume(10, 100, 2050, 104, 2000), "heard"),            # a long page's first part
    (Resume(10, 100, 2050, 104, 2000), Resume(10, 100, 4050, 104, 4000), "heard"),   # its next part
    (Resume(10, 100, 4050, 104, 4000), Resume(11, 104, 4100), "heard"),         # the page done
    (Resume(10, 100, 4050, 104, 4000), Resume(10, 100, 2050, 104, 2000), "held"),    # an older report
    (Resume(11, 104, 4100), Resume(10, 100, 4050, 104, 4000), "held"),
])
def test_a_resume_point_inside_a_long_page_only_moves_forward(held, heard, kept):
    report = DumpReport("a", "reading", resume=heard)
    out = dump_plan.absorbed(_reading(resume=held), {"n1": {"a": report}}, AT, retry)
    assert out["a"].resume == (heard if kept == "heard" else held)


def test_done_frees_the_node_and_the_next_file_starts():
    two = files(("a", "s", 0), ("b", "s", 1), parallel=1)
    out = dump_plan.placed(two, {"n1"}, AT)
    assert nodes_of(out) == {"a": "n1", "b": None}
    done = DumpReport("a", DONE, resume=Resume(7, 70, 700))
    out = dump_plan.absorbed(out, {"n1": {"a": done}}, AT, retry)
    assert (out["a"].state, out["a"].node, out["a"].finished_at) == (DONE, None, AT)
    assert nodes_of(dump_plan.placed(out, {"n1"}, AT)) == {"a": None, "b": "n1"}


def test_a_failure_backs_off_longer_each_time_and_keeps_the_error():
    failure = DumpReport("a", FAILED, resume=Resume(3, 30, 9), error="DumpStalled: no byte for 60 s")
    out = dump_plan.absorbed(_reading(), {"n1": {"a": failure}}, AT, retry)
    f = out["a"]
    assert (f.state, f.node, f.attempts, f.error, f.resume) == (FAILED, None, 1, failure.error, Resume(3, 30, 9))
    assert f.retry_at == AT + timedelta(seconds=30)
    again = dump_plan.absorbed(_reading(attempts=1), {"n1": {"a": failure}}, AT, retry)["a"]
    assert again.retry_at == AT + timedelta(seconds=60)


@pytest.mark.parametrize("states, enabled, shown", [
    ([PENDING, READING], True, "bootstrapping"),
    ([DONE, FAILED], True, "failed"),
    ([DONE, DONE], True, "dumped"),
    ([DONE, DONE], False, "disabled"),
    ([], True, "bootstrapping"),
])
def test_set_state(states, enabled, shown):
    assert dump_plan.set_state(states, enabled) == shown


SINCE = datetime(2026, 1, 1, tzinfo=timezone.utc)


def catch_up(**kw) -> dict[str, dump_plan.CatchUpState]:
    return {"s": dump_plan.CatchUpState(set_id="s", wiki=WIKI, tenant_id="t", since=SINCE, **kw)}


def test_a_catch_up_keeps_its_reader_while_it_lives_and_a_new_one_starts_counting_at_zero():
    assert dump_plan.readers(catch_up(node="n1"), {"n1", "n2"})["s"].node == "n1"
    moved = dump_plan.readers(catch_up(node="n1", revisions=5, current=7), {"n2"})["s"]
    assert (moved.node, moved.revisions, moved.current) == ("n2", 12, 0)
    assert dump_plan.readers(catch_up(), set())["s"].node is None


def test_catch_ups_spread_over_the_nodes():
    two = {**catch_up(), "r": dump_plan.CatchUpState(set_id="r", wiki=WIKI, tenant_id="t", since=SINCE)}
    assert {s.node for s in dump_plan.readers(two, {"n1", "n2"}).values()} == {"n1", "n2"}


def test_the_duty_names_the_identity_the_tenant_and_where_to_resume():
    at = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    (duty,) = dump_plan.catch_up_duties(catch_up(node="n1", position=at, namespaces=(0,)), 3.0,
                                        census_plan.Settings(0, 60.0))["n1"]
    assert (duty.since, duty.position, duty.identity, duty.tenants, duty.interval_s, duty.namespaces) == (
        "2026-01-01T00:00:00Z", "2026-03-01T12:00:00Z", "ch.wikipedia.org", ("t",), 3.0, (0,))


def test_only_the_reader_is_heard_and_its_marks_only_move_forward():
    from shared.dump_wire import CatchUpReport
    mark = datetime(2026, 3, 1, tzinfo=timezone.utc)
    before = catch_up(node="n1", position=mark, caught_up_to=mark)
    report = CatchUpReport("s", position="2026-04-01T00:00:00Z", caught_up_to="2026-02-01T00:00:00Z", revisions=9,
                           requests=4)
    after = dump_plan.caught_up(before, {"n1": {"s": report}}, AT)["s"]
    assert (after.position, after.caught_up_to, after.current, after.requests, after.reported_at) == (
        datetime(2026, 4, 1, tzinfo=timezone.utc), mark, 9, 4, AT)
    assert dump_plan.caught_up(before, {"n2": {"s": report}}, AT) == before


def test_a_reader_that_starts_again_on_its_node_keeps_what_it_wrote():
    from shared.dump_wire import CatchUpReport
    before = catch_up(node="n1", revisions=5, current=40)
    after = dump_plan.caught_up(before, {"n1": {"s": CatchUpReport("s", revisions=3)}}, AT)["s"]
    assert (after.revisions, after.current) == (45, 3)
    steady = dump_plan.caught_up(before, {"n1": {"s": CatchUpReport("s", revisions=41)}}, AT)["s"]
    assert (steady.revisions, steady.current) == (5, 41)


@pytest.mark.parametrize("states, since, caught_up_to, shown", [
    ([DONE], None, None, "dumped"),
    ([DONE], SINCE, None, "catching_up"),
    ([DONE], SINCE, AT, "following"),
    ([DONE, READING], SINCE, None, "bootstrapping"),
])
def test_set_state_after_the_dump(states, since, caught_up_to, shown):
    assert dump_plan.set_state(states, True, since, caught_up_to) == shown


def test_a_census_listed_whole_sends_its_unproven_shards_to_the_nodes_and_finishes_with_their_proofs():
    from shared.census_wire import CensusReport, ShardProof, ShardReport
    from shared.dump_wire import CatchUpReport
    started = "2026-03-01T12:30:00Z"
    listing = CensusReport(cut="2026-03-01T12:00:00Z", started_at=started, shard_count=8, listed=40, requests=1)
    before = catch_up(node="n1", census_running=listing, namespaces=(0,), content=True)
    assert dump_plan.census_shard_duties(before, {"n1", "n2", "n3"}) == {}     # still listing
    whole = replace(listing, listed_whole=True)
    heard = dump_plan.caught_up(before, {"n1": {"s": CatchUpReport("s", census=whole)}}, AT)
    sent = dump_plan.census_shard_duties(heard, {"n1", "n2", "n3"})
    duties = [d for ds in sent.values() for d in ds]
    assert sorted(d.shard for d in duties) == list(range(8)) and len(sent) >= 2     # spread
    assert all((d.set_id, d.started_at, d.cut, d.identity, d.tenants, d.namespaces, d.content, d.shard_count) ==
               ("s", started, "2026-03-01T12:00:00Z", "ch.wikipedia.org", ("t",), (0,), True, 8) for d in duties)
    assert all(census_plan.prover("s", started, d.shard, ["n1", "n2", "n3"]) == node
               for node, ds in sent.items() for d in ds)

    def proof(n: int) -> ShardProof:
        return ShardProof(shard=n, pages=1, wiki=5, stored=5, requests=1)
    # the nodes prove what they were sent; the reader is not polled this tick: the proofs count all the same
    reports = {node: tuple(ShardReport("s", started, d.shard, proof(d.shard)) for d in ds[:1])
               for node, ds in sent.items()}
    part = dump_plan.caught_up(heard, {}, AT, reports)["s"]
    assert part.census_running is not None and len(part.census_running.shards) == len(sent)
    left = dump_plan.census_shard_duties({"s": part}, {"n1", "n2", "n3"})
    assert sorted(d.shard for ds in left.values() for d in ds) == sorted(
        d.shard for ds in sent.values() for d in ds[1:])
    # the reader reports its census again (it knows no proofs): the proven shards stay
    again = dump_plan.caught_up({"s": part}, {"n1": {"s": CatchUpReport("s", census=whole)}}, AT)["s"]
    assert again.census_running == part.census_running
    every = {node: tuple(ShardReport("s", started, d.shard, proof(d.shard)) for d in ds)
             for node, ds in sent.items()}
    done = dump_plan.caught_up({"s": again}, {}, AT, every)["s"]
    assert done.census_running is None and done.census_last is not None
    assert done.census_last.finished_at == "2026-11-25T08:00:00Z" and census_plan.proven(done.census_last)
    assert {p.node for p in done.census_last.shards} == set(sent) and done.census_last.all_requests == 9
    assert dump_plan.census_shard_duties({"s": done}, {"n1"}) == {}
    # the reader is told the census it listed is closed
    (told,) = dump_plan.catch_up_duties({"s": done}, 3.0, census_plan.Settings(8, 60.0))["n1"]
    assert told.census_closed == started
