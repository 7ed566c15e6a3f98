"""blackwidow.census_plan: when a set's next census may start, what the hub keeps of its reader's reports, and
what the set shows. Pure, by table."""
from datetime import datetime, timezone

import pytest

from blackwidow import census_plan
from shared.census_wire import CensusReport, ShardProof
from shared.dump_wire import CatchUpDuty

AT = "2026-03-01T12:00:00Z"
LATER = "2026-03-02T12:00:00Z"
OK = ShardProof(shard=0, pages=2, wiki=5, stored=5)
REPAIRED = ShardProof(shard=1, pages=1, wiki=3, stored=3, repaired=2)
EXTRA = ShardProof(shard=1, pages=1, wiki=3, stored=3, extra=1, extra_ids=(9,))


def census(finished: str | None, *shards: ShardProof, count: int = 2) -> CensusReport:
    return CensusReport(cut=AT, started_at=AT, shard_count=count, finished_at=finished, listed=8, requests=4,
                        shards=shards)


def test_the_next_census_starts_an_interval_after_the_last_one_ended():
    assert census_plan.after(None, 60.0) is None
    assert census_plan.after(census(None), 60.0) is None
    assert census_plan.after(census(AT), 60.0) == datetime(2026, 3, 1, 12, 1, tzinfo=timezone.utc)
    duty = CatchUpDuty(set_id="s", wiki="w", since=AT)
    told = census_plan.duty(duty, census(AT), None, census_plan.Settings(16, 60.0))
    assert (told.census_shards, told.census_after, told.census_every_s) == (16, "2026-03-01T12:01:00Z", 60.0)
    assert census_plan.duty(duty, None, None, census_plan.Settings(16, 60.0)).census_after is None


@pytest.mark.parametrize("own, shards, after", [
    (None, 16, "2026-03-01T12:01:00Z"),         # the deployment's interval
    (3600, 16, "2026-03-01T13:00:00Z"),         # the set's own
    (0, 0, None),                               # no census for this set
])
def test_a_sets_own_interval(own, shards, after):
    told = census_plan.duty(CatchUpDuty(set_id="s", wiki="w", since=AT), census(AT), own,
                            census_plan.Settings(16, 60.0))
    assert (told.census_shards, told.census_after) == (shards, after)


RUNNING, DONE, NEWER = census(None, OK), census(AT, OK, REPAIRED), census(LATER, OK, EXTRA)


@pytest.mark.parametrize("last, running, report, want", [
    (None, None, None, (None, None)),
    (DONE, RUNNING, None, (DONE, None)),            # the reader started again: nothing runs
    (None, None, RUNNING, (None, RUNNING)),
    (DONE, None, RUNNING, (DONE, RUNNING)),
    (None, RUNNING, DONE, (DONE, None)),
    (DONE, None, NEWER, (NEWER, None)),
    (NEWER, None, DONE, (NEWER, None)),             # never back to an older one
    (DONE, None, DONE, (DONE, None)),
])
def test_what_the_hub_keeps_of_a_report(last, running, report, want):
    assert census_plan.absorbed(last, running, report) == want


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
    assert running["running"]["listed"] == 8
    # a finished census that misses a shard is not a proof
    assert census_plan.summary(census(AT, OK), None, 60.0)["state"] == "unproven"
