"""shared.census_wire: a census report's JSON shape, round trips and refusals naming the field."""
import pytest

from shared.census_wire import MAX_IDS, CensusReport, ShardProof
from shared.dump_wire import CatchUpDuty, CatchUpReport
from shared.errors import ValidationError

AT = "2026-03-01T12:00:00Z"
PROOF = ShardProof(shard=2, pages=3, wiki=10, stored=9, repaired=4, extra=1, extra_ids=(77,), missing_ids=(5,))


@pytest.mark.parametrize("report", [
    CensusReport(cut=AT, started_at=AT, shard_count=4),
    CensusReport(cut=AT, started_at=AT, shard_count=4, finished_at=AT, listed=10, requests=3, shards=(PROOF,)),
])
def test_census_round_trip(report):
    assert CensusReport.from_dict(report.to_dict()) == report
    carried = CatchUpReport(set_id="s", census=report)
    assert CatchUpReport.from_dict(carried.to_dict()) == carried


def test_a_duty_carries_the_census_settings_and_an_old_duty_has_none():
    duty = CatchUpDuty(set_id="s", wiki="w", since=AT, census_shards=16, census_after=AT, census_every_s=60.0)
    assert CatchUpDuty.from_dict(duty.to_dict()) == duty
    old = CatchUpDuty.from_dict({"set_id": "s", "wiki": "w", "since": AT})
    assert (old.census_shards, old.census_after) == (0, None)


def test_a_shard_proof_reads_as_it_counts():
    assert (PROOF.missing, PROOF.proven) == (1, False)
    assert ShardProof(shard=0, pages=1, wiki=2, stored=2).proven


GOOD = CensusReport(cut=AT, started_at=AT, shard_count=4, shards=(PROOF,)).to_dict()


@pytest.mark.parametrize("change, field", [
    ({"cut": "yesterday"}, "cut"),
    ({"shard_count": 0}, "shard_count"),
    ({"shard_count": 300}, "shard_count"),
    ({"listed": -1}, "listed"),
    ({"shards": [{**PROOF.to_dict(), "shard": 4}]}, "shards"),
    ({"shards": [PROOF.to_dict(), PROOF.to_dict()]}, "shards"),
    ({"shards": [{**PROOF.to_dict(), "stored": 11}]}, "stored"),
    ({"shards": [{**PROOF.to_dict(), "extra_ids": list(range(1, MAX_IDS + 2))}]}, "extra_ids"),
    ({"shards": ["x"]}, "shards"),
])
def test_a_malformed_report_names_the_field(change, field):
    with pytest.raises(ValidationError) as err:
        CensusReport.from_dict({**GOOD, **change})
    assert err.value.field == field


def test_a_duty_with_too_many_shards_names_the_field():
    with pytest.raises(ValidationError) as err:
        CatchUpDuty.from_dict({"set_id": "s", "wiki": "w", "since": AT, "census_shards": 300})
    assert err.value.field == "census_shards"
