"""A source counts the time it waits for the wiki's batches and the time it spends writing them, so
an operator can tell whether the wiki or the store paces a harvest (bw_spawn_batch_wait_seconds,
bw_spawn_store_write_seconds)."""
import time

from shared.hashing import source_uuid
from shared.wire import SubscriptionSpec
from spawn.metrics import SpawnMetrics
from spawn.source import DataSource
from spawn.subscriber import Subscriber
from tests.unit.spawn.fakes import FakeBatcher, FakeWiki, MemoryStore, make_revisions

WIKI = "http://wiki.test/w/api.php"
PAUSE_S = 0.02


class SlowWiki(FakeWiki):
    def revision_batches(self, page, **kw):
        for batch in super().revision_batches(page, **kw):
            time.sleep(PAUSE_S)
            yield batch


class SlowStore(MemoryStore):
    def write(self, revisions):
        time.sleep(PAUSE_S)
        super().write(revisions)


def harvest(wiki, store) -> tuple[float, float]:
    """(seconds waited for batches, seconds spent writing) of one pass over 50 revisions."""
    metrics = SpawnMetrics()
    source = DataSource("k", "Page", client=wiki, store=store, batcher=FakeBatcher(), revisit_min_s=60,
                        revisit_max_s=600, on_limit=lambda s: None, metrics=metrics)
    spec = SubscriptionSpec(id="s", source_uuid=str(source_uuid(WIKI, "Page")), tenant_id="t", wiki=WIKI,
                            title="Page")
    source.attach(Subscriber(spec, seen_at=0))
    source.run_once()
    assert len(store.rows) == 50
    sample = metrics.registry.get_sample_value
    return sample("bw_spawn_batch_wait_seconds_total"), sample("bw_spawn_store_write_seconds_total")


def test_a_slow_wiki_shows_as_waiting_for_batches():
    waited, writing = harvest(SlowWiki(make_revisions(50), batch=10), MemoryStore())
    # the opening batch comes with the title; the next 4 take a pause each, fetched while writing
    assert waited >= 3 * PAUSE_S and waited > 2 * writing


def test_a_slow_store_shows_as_writing_with_the_next_batch_fetched_meanwhile():
    waited, writing = harvest(FakeWiki(make_revisions(50), batch=10), SlowStore())
    assert writing >= 5 * PAUSE_S and writing > 2 * waited
