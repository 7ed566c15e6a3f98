"""A subscription arriving on a new node resumes from the stored resume point without reading its page's
history: one node harvests the seeded wiki's biggest article into real Cassandra, then the subscription
starts on a second node (its own registry and fetchers on the same store), and the Cassandra reads that
start causes are counted. Before the store's count was used, the new node read every stored revision."""
import pytest

from shared.hashing import wiki_key
from spawn.metrics import SpawnMetrics
from spawn.registry import Registry
from spawn.wikis import Wikis
from tests.integration.spawn.test_harvest import spec, status, wait_for
from tools.wikigen import BIG_TITLE

pytestmark = pytest.mark.integration


class CountedReads:
    """Every SELECT the driver session is asked to run while counting (pages of a long result not included:
    rows are counted at the store's history() instead)."""

    def __init__(self, session, store):
        self.session, self.store = session, store
        self.selects: list[str] = []
        self.rows = 0

    def __enter__(self) -> "CountedReads":
        self.session.add_request_init_listener(self._on_request)
        history = self._history = self.store.history

        def counted(*args, **kw):
            for rev in history(*args, **kw):
                self.rows += 1
                yield rev
        self.store.history = counted
        return self

    def __exit__(self, *exc) -> None:
        self.session.remove_request_init_listener(self._on_request)
        self.store.history = self._history

    def _on_request(self, future) -> None:
        query = getattr(future.query, "prepared_statement", future.query)
        text = getattr(query, "query_string", str(query))
        if text.lstrip().upper().startswith("SELECT"):
            self.selects.append(text)


def node(spawn_config, store, mediawiki):
    metrics = SpawnMetrics()
    wikis = Wikis(spawn_config, http=mediawiki.session(), store=store, metrics=metrics)
    return Registry(wikis.make_source, orphan_after_s=60), wikis


def test_a_moved_subscription_resumes_with_a_few_reads_and_no_history(spawn_config, store, cassandra_session,
                                                                      mediawiki):
    api, n = mediawiki.api_url, len(mediawiki.expected.page(BIG_TITLE).revisions)
    first, first_wikis = node(spawn_config, store, mediawiki)
    first.upsert(spec(api, "big", BIG_TITLE))
    source = first.source(spec(api, "big", BIG_TITLE).source_uuid)
    wait_for(lambda: source.complete, 300, "the first node's harvest")
    page_id = source.page.page_id
    months = len({(r.timestamp.year, r.timestamp.month) for r in store.history(wiki_key(api), page_id)})
    first.clear()                        # the move: the old copy is dropped once the new one runs
    first_wikis.stop()

    second, second_wikis = node(spawn_config, store, mediawiki)
    try:
        with CountedReads(cassandra_session, store) as reads:
            second.upsert(spec(api, "big", BIG_TITLE))
            moved = second.source(spec(api, "big", BIG_TITLE).source_uuid)
            wait_for(lambda: moved.complete, 60, "the second node to catch up")
        st = status(second, "big")
        assert (st.state, st.revisions, st.last_rev_id) == ("running", n, source.page.last_rev_id)
        assert moved.written == 0
        print(f"\nmove of {BIG_TITLE!r} ({n} revisions over {months} months): {len(reads.selects)} Cassandra "
              f"reads, {reads.rows} stored revisions read")
        assert len(reads.selects) <= 6 and reads.rows <= 100, (reads.selects, reads.rows)
        assert months > len(reads.selects)         # fewer reads than the history has month partitions
    finally:
        second.clear()
        second_wikis.stop()
