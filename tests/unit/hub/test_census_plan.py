"""blackwidow.census_plan: when a set's next census may start, what the hub keeps of its reader's reports and of
the nodes' shard proofs, which node proves a shard, and what the set shows. Pure, by table."""
from datetime import datetime, timezone

import pytest

from blackwidow import census_plan
from shared.census_wire import CensusReport, ShardProof, ShardReport
from shared.dump_wire import CatchUpDuty

AT = "2026-03-01T12:00:00Z"
LATER = "2026-03-02T12:00:00Z"
NOW = datetime(2026, 3, 3, tzinfo=timezone.utc)
OK = ShardProof(shard=0, pages=2, wiki=5, stored=5)
REPAIRED = ShardProof(shard=1, pages=1, wiki=3, stored=3, repaired=2)
EXTRA = ShardProof(shard=1, pages=1, wiki=3, stored=3, extra=1, extra_ids=(9,))


def census(finished: str | None, *shards: ShardProof, count: int = 2, started: str = AT,
           whole: bool = False) -> CensusReport:
    return CensusReport(cut=AT, started_at=started, shard_count=count, finished_at=finished, listed=8, requests=4,
                        shards=shards, listed_whole=whole)


def test_the_next_census_starts_an_interval_after_the_last_one_ended():
    assert census_plan.after(None, 60.0) is None
    assert census_plan.after(census(None), 60.0) is None
    assert census_plan.after(census(AT), 60.0) == datetime(2026, 3, 1, 12, 1, tzinfo=timezone.utc)
    duty = CatchUpDuty(set_id="s", wiki="w", since=AT)
    told = census_plan.duty(duty, census(AT), None, census_plan.Settings(16, 60.0))
    assert (told.census_shards, told.census_after, told.census_every_s) == (16, "2026-03-01T12:01:00Z", 60.0)
    assert told.census_closed == AT             # the reader lets go of that census's listing
    first = census_plan.duty(duty, None, None, census_plan.Settings(16, 60.0))
    assert (first.census_after, first.census_closed) == (None, None)


@pytest.mark.parametrize("own, shards, after", [
    (None, 16, "2026-03-01T12:01:00Z"),         # the deployment's interval
    (3600, 16, "2026-03-01T13:00:00Z"),         # the set's own
    (0, 0, None),                               # no census for this set
])
def test_a_sets_own_interval(own, shards, after):
    told = census_plan.duty(CatchUpDuty(set_id="s", wiki="w", since=AT), census(AT), own,
                            census_plan.Settings(16, 60.0))
    assert (told.census_shards, told.census_after) == (shards, after)


RUNNING, DONE, NEWER = census(None, OK, started=LATER), census(AT, OK, REPAIRED), census(LATER, OK, EXTRA)
LISTING = census(None, started=LATER)
WHOLE = census(None, started=LATER, whole=True)
HALF = census(None, OK, started=LATER, whole=True)


@pytest.mark.parametrize("last, running, report, want", [
    (None, None, None, (None, None)),
    (DONE, RUNNING, None, (DONE, None)),            # the reader started again: nothing runs
    (None, None, RUNNING, (None, RUNNING)),
    (DONE, None, RUNNING, (DONE, RUNNING)),
    (DONE, LISTING, WHOLE, (DONE, WHOLE)),          # the listing is whole
    (DONE, HALF, WHOLE, (DONE, HALF)),              # the shards nodes proved stay
    (DONE, census(None, OK), WHOLE, (DONE, WHOLE)),     # another census's shards do not
    (DONE, None, census(None, started=AT, whole=True), (DONE, None)),   # finished here, its reader not yet told
    (None, RUNNING, DONE, (DONE, None)),            # a reader that proves alone (an earlier release)
    (DONE, None, NEWER, (NEWER, None)),
    (NEWER, None, DONE, (NEWER, None)),             # never back to an older one
    (DONE, None, DONE, (DONE, None)),
])
def test_what_the_hub_keeps_of_a_readers_report(last, running, report, want):
    assert census_plan.heard(last, running, report) == want


def shard(n: int, proof: ShardProof | None = OK, started: str = LATER) -> ShardReport:
    return ShardReport(set_id="s", started_at=started, shard=n,
                       proof=None if proof is None else ShardProof(**{**proof.__dict__, "shard": n}))


@pytest.mark.parametrize("running, reports, want_running_shards, finished", [
    (None, [("n1", shard(0))], None, False),                    # nothing runs
    (LISTING, [("n1", shard(0))], (), False),                   # not listed whole: no proof counts yet
    (WHOLE, [("n1", shard(0))], ((0, "n1"),), False),
    (WHOLE, [("n1", shard(0, None))], (), False),               # an error, no proof
    (WHOLE, [("n1", shard(0, started=AT))], (), False),         # another census's
    (WHOLE, [("n1", shard(0)), ("n2", shard(1))], None, True),  # every shard: finished
    (HALF, [("n2", shard(0)), ("n2", shard(1))], None, True),   # the first proof of a shard stays
    (WHOLE, [("n1", shard(5))], (), False),                     # no such shard
])
def test_what_the_hub_keeps_of_the_nodes_shard_proofs(running, reports, want_running_shards, finished):
    last, after = census_plan.proved(DONE, running, reports, NOW)
    if finished:
        assert after is None and last is not None and last.finished_at == "2026-03-03T00:00:00Z"
        assert [p.shard for p in last.shards] == [0, 1] and census_plan.proven(last)
        assert last.shards[1].node == "n2"
        return
    assert last == DONE
    if want_running_shards is None:
        assert after is running
    else:
        assert after is not None and tuple((p.shard, p.node) for p in after.shards) == want_running_shards


def test_the_shards_handed_out_and_where_they_go():
    assert census_plan.unproven(None) == [] and census_plan.unproven(LISTING) == []
    assert census_plan.unproven(WHOLE) == [0, 1] and census_plan.unproven(HALF) == [1]
    nodes = ["a", "b", "c"]
    placed = [census_plan.prover("s", LATER, n, nodes) for n in range(64)]
    assert placed == [census_plan.prover("s", LATER, n, list(nodes)) for n in range(64)]     # stable
    assert set(placed) == set(nodes)                            # spread over every node
    assert all(census_plan.prover("s", LATER, n, ["a"]) == "a" for n in range(8))


def test_what_a_set_shows():
    assert census_plan.summary(None, None, 60.0) is None
    shown = census_plan.summary(DONE, None, 60.0)
    assert shown["state"] == "proven" and shown["running"] is None and shown["next_at"] == "2026-03-01T12:01:00Z"
    last = shown["last"]
    assert (last["shards"], last["proven_shards"], last["revisions"], last["stored"], last["repaired"],
            last["missing"], last["extra"], last["requests"]) == (2, 2, 8, 8, 2, 0, 0, 4)
    assert [s["proven"] for s in last["per_shard"]] == [True, True]
    unproven = census_plan.summary(NEWER, None, 60.0)
    assert unproven["state"] == "unproven" and unproven["last"]["per_shard"][1]["extra_ids"] == [9]
    running = census_plan.summary(DONE, RUNNING, 60.0)
    assert running["state"] == "running" and running["running"]["shards_done"] == 1
    assert running["running"]["listed_whole"] is False
    assert running["running"]["listed"] == 8
    # a finished census that misses a shard is not a proof
    assert census_plan.summary(census(AT, OK), None, 60.0)["state"] == "unproven"
