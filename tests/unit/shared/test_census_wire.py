"""shared.census_wire: a census report's JSON shape, round trips and refusals naming the field."""
from dataclasses import replace

import pytest

from shared.census_wire import MAX_IDS, CensusReport, ShardDuty, ShardProof, ShardReport
from shared.dump_wire import CatchUpDuty, CatchUpReport
from shared.errors import ValidationError
from shared.wire import Poll, StatusReport

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
    duty = CatchUpDuty(set_id="s", wiki="w", since=AT, census_shards=16, census_after=AT, census_every_s=60.0,
                       census_closed=AT)
    assert CatchUpDuty.from_dict(duty.to_dict()) == duty
    old = CatchUpDuty.from_dict({"set_id": "s", "wiki": "w", "since": AT})
    assert (old.census_shards, old.census_after, old.census_closed) == (0, None, None)


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


SHARD = ShardDuty(set_id="s", started_at=AT, wiki="https://w.example.org/w/api.php", cut=AT, shard=3, shard_count=16,
                  identity="w.example.org", tenants=("t",), namespaces=(0, 4), content=True)


def test_shard_duties_and_reports_round_trip_in_polls_and_reports():
    assert ShardDuty.from_dict(SHARD.to_dict()) == SHARD
    bare = ShardDuty(set_id="s", started_at=AT, wiki="w", cut=AT, shard=0, shard_count=1)
    assert ShardDuty.from_dict(bare.to_dict()) == bare
    proven = ShardReport(set_id="s", started_at=AT, shard=2, proof=PROOF)
    failed = ShardReport(set_id="s", started_at=AT, shard=3, error="StoreError: timed out")
    for report in (proven, failed):
        assert ShardReport.from_dict(report.to_dict()) == report
    poll = Poll(node_id="n", census=(SHARD,))
    assert Poll.from_dict(poll.to_dict()).census == (SHARD,)
    status = StatusReport(node_id="n", boot_id="b", attached=True, census=(proven, failed))
    assert StatusReport.from_dict(status.to_dict()).census == (proven, failed)
    assert "census" not in Poll(node_id="n").to_dict()
    whole = CensusReport(cut=AT, started_at=AT, shard_count=4, listed_whole=True)
    assert CensusReport.from_dict(whole.to_dict()) == whole
    assert "listed_whole" not in CensusReport(cut=AT, started_at=AT, shard_count=4).to_dict()
    # the hub's record of who proved a shard, kept with the census it holds
    assert ShardProof.from_dict(replace(PROOF, node="n1").to_dict()).node == "n1"


@pytest.mark.parametrize("change, field", [
    ({"shard": 16}, "shard"),
    ({"shard_count": 0}, "shard_count"),
    ({"cut": "soon"}, "cut"),
    ({"tenants": [1]}, "tenants"),
    ({"namespaces": []}, "namespaces"),
    ({"set_id": 5}, "set_id"),
])
def test_a_malformed_shard_duty_names_the_field(change, field):
    with pytest.raises(ValidationError) as err:
        ShardDuty.from_dict({**SHARD.to_dict(), **change})
    assert err.value.field == field


def test_a_shard_report_of_another_shards_proof_is_refused():
    with pytest.raises(ValidationError) as err:
        ShardReport.from_dict({"set_id": "s", "started_at": AT, "shard": 1, "proof": PROOF.to_dict()})
    assert err.value.field == "proof"
