"""spawn.census_shards: a node proves the census shards the hub names, one at a time, reports each proof until the
hub stops naming it, and reports a failure and tries again. The SQLite store real; `responses` stands in for the
wiki's repair answers."""
import responses

from shared.census_wire import ShardDuty, listing_key
from shared.revisions.store import StoreError
from spawn.census_shards import ShardProvers
from tests.unit.spawn.test_catch_up import API, WIKI, client, store  # noqa: F401 (a fixture)
from tests.support.processes import wait_for
from tests.unit.spawn.test_census import by_id_answer, rev, stored

START = "2026-03-01T12:30:00Z"


def duty(shard: int, set_id: str = "s1") -> ShardDuty:
    return ShardDuty(set_id=set_id, started_at=START, wiki=API, cut="2026-03-01T12:00:00Z", shard=shard,
                     shard_count=2)


def wait_until(check):
    return wait_for(check, 10.0, 0.01, "the provers' reports")


def listed(into, shard: int, pages: dict[int, list[int]]) -> None:
    into.add_listing(WIKI, listing_key("s1", START), shard, pages)


@responses.activate
def test_named_shards_are_proven_reported_until_no_longer_named(store):  # noqa: F811
    stored(store, 1, rev(11, 0, "2026-01-01T00:00:00Z"))
    listed(store, 0, {1: [11]})
    listed(store, 1, {2: [21]})                        # missing: the repair writes it
    responses.add(responses.GET, API, json=by_id_answer({2: [rev(21, 0, "2026-01-05T00:00:00Z")]}))
    provers = ShardProvers(lambda wiki, identity: client(), store)
    try:
        provers.apply([duty(0), duty(1)])
        reports = wait_until(lambda: (r := provers.reports()) and len(r) == 2 and r)
        by_shard = {r.shard: r for r in reports}
        assert all(r.proof is not None and r.proof.proven and r.error is None for r in reports)
        assert (by_shard[1].proof.repaired, by_shard[1].proof.requests) == (1, 1)
        assert [r.rev_id for r in store.history(WIKI, 2)] == [21]
        # the hub took shard 0's proof: it names shard 1 only, and shard 0 is no longer reported
        provers.apply([duty(1)])
        assert [r.shard for r in provers.reports()] == [1]
        assert len(responses.calls) == 1                # a proof is not proven again while named
    finally:
        provers.stop()
    assert provers.reports() == ()


class FailingOnce:
    """The store, whose first listing read fails."""

    def __init__(self, inner):
        self.inner, self.failed = inner, False

    def listing(self, *args):
        if not self.failed:
            self.failed = True
            raise StoreError("read failed: timed out")
        return self.inner.listing(*args)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_failure_is_reported_and_tried_again(store):  # noqa: F811
    stored(store, 1, rev(11, 0, "2026-01-01T00:00:00Z"))
    listed(store, 0, {1: [11]})
    provers = ShardProvers(lambda wiki, identity: client(), FailingOnce(store), retry_s=0.3)
    try:
        provers.apply([duty(0)])
        failed = wait_until(lambda: (r := provers.reports()) and r[0].error and r)
        assert failed[0].proof is None and "timed out" in failed[0].error
        proven = wait_until(lambda: (r := provers.reports()) and r[0].proof and r)
        assert proven[0].proof.proven and proven[0].error is None
    finally:
        provers.stop()


def test_stopped_provers_start_again_on_the_next_duties(store):  # noqa: F811
    stored(store, 1, rev(11, 0, "2026-01-01T00:00:00Z"))
    listed(store, 0, {1: [11]})
    provers = ShardProvers(lambda wiki, identity: client(), store)
    provers.apply([duty(0)])
    wait_until(provers.reports)
    provers.stop()                      # a detach
    provers.apply([duty(0)])
    try:
        assert wait_until(provers.reports)[0].proof.proven
    finally:
        provers.stop()
