"""`make bench` is not part of the test run (it takes minutes and measures): at least every script it
runs must import, so a refactoring elsewhere cannot break one unnoticed."""
import importlib
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from bench.run import SCRIPTS
from tests.fixtures.edge import LoggedRequest


@pytest.mark.parametrize("name", [*SCRIPTS, "spawn_farm", "bench_wiki"])
def test_bench_script_imports(name):
    module = importlib.import_module(f"bench.{name}")
    assert callable(getattr(module, "main", None)), f"bench.{name} has no main()"


def _logged(end: float, took: float, status: int = 200, uri: str = "/api.php?action=query") -> LoggedRequest:
    return LoggedRequest(time="", msec=end, wiki="seeded", identity_class="anon", identity="x", user_agent="ua",
                         status=status, request_time=took, upstream_time=took, method="GET", uri=uri,
                         limit_req="REJECTED" if status == 429 else "PASSED", limit_conn="PASSED")


@pytest.mark.parametrize("requests, span, want", [
    # one request a second for 10 s against 2 r/s: half the rate, a tenth of the one slot busy
    ([_logged(i + 0.1, 0.1) for i in range(10)], (0.0, 10.0), (10, 0, 0.5, 0.1, 0.5)),
    # a 429 is no progress: it counts as throttled, not towards the rate
    ([_logged(1.1, 0.1), _logged(2.1, 0.1, 429)], (0.0, 4.0), (2, 1, 0.125, 0.05, 0.125)),
    # slots busy throughout with slow answers: the in-flight limit binds
    ([_logged(i + 1.0, 1.0) for i in range(4)], (0.0, 4.0), (4, 0, 0.5, 1.0, 1.0)),
])
def test_edge_use_is_the_binding_one_of_rate_and_slot_time(requests, span, want):
    from bench.edge_use import use
    got = use(requests, in_flight=1, per_s=2, per_min=600, span=span)
    assert (got.requests, got.throttled, got.rate_use, round(got.busy, 6), got.use) == want


@pytest.mark.parametrize("uri, page", [
    ("/api.php?action=query&prop=revisions&pageids=15&rvlimit=50", "15"),
    ("/api.php?action=query&titles=Synthetic%20article%201", "Synthetic article 1"),
    ("/api.php?action=query&titles=A%7CB", None),
    ("/api.php?action=query&meta=siteinfo", None),
])
def test_a_logged_request_is_about_the_page_it_names(uri, page):
    from bench.edge_use import page_of
    assert page_of(uri) == page


@pytest.mark.parametrize("uri, kind", [
    ("/api.php?action=query&list=recentchanges&rclimit=500", "list=recentchanges"),
    # a feed read with the suppression log in the same request is still one feed read
    ("/api.php?action=query&list=recentchanges%7Clogevents&letype=suppress", "list=recentchanges"),
    ("/api.php?action=query&list=logevents&letype=suppress", "other"),
    ("/api.php?action=query&prop=info&pageids=51", "prop=info"),
    ("/api.php?action=query&prop=revisions&pageids=51", "prop=revisions"),
])
def test_the_feed_benches_tell_a_feed_read_by_its_list(uri, kind):
    from bench.feed_freshness import kind as kind_of
    from tests.fixtures.edge import LoggedRequest
    logged = LoggedRequest("", 0.0, "writable", "anon", "x", "ua", 200, 0.01, 0.01, "GET", uri, "", "")
    assert kind_of(logged) == kind


def test_shares_compare_each_tenant_with_its_weight():
    from bench.edge_use import shares
    assert shares({"a": 25, "b": 75}, {"a": 1.0, "b": 3.0}) == {"a": (0.25, 0.25), "b": (0.75, 0.75)}


class _Stored:
    """A revision store holding one page, for the ring harvest's completeness check."""

    def __init__(self, sha1s: list[str], counted: int):
        from shared.revisions.model import PageState
        self._rows = [SimpleNamespace(rev_id=10 + i, sha1=s) for i, s in enumerate(sha1s)]
        self._state = PageState("w", 1, "A", 10 + len(sha1s) - 1, datetime.now(timezone.utc), counted)

    def page_id(self, wiki, title):
        return 1 if title == "A" else None

    def history(self, wiki, page_id):
        return reversed(self._rows)               # newest first, as the stores answer

    def page(self, wiki, page_id):
        return self._state


@pytest.mark.parametrize("sha1s, counted, expected, problems", [
    (["a", "b"], 2, {"A": ["a", "b"]}, 0),
    (["a"], 1, {"A": ["a", "b"]}, 1),                  # a revision missing
    (["a", "b"], 1, {"A": ["a", "b"]}, 1),             # the page row undercounts
    (["a", "b"], 2, {"A": ["a", "b"], "B": ["c"]}, 1),  # a page never stored
])
def test_ring_harvest_counts_a_history_complete_only_when_it_equals_the_wiki(sha1s, counted, expected, problems):
    from bench.ring_harvest import history_problems
    assert len(history_problems(_Stored(sha1s, counted), "w", expected)) == problems


@pytest.mark.parametrize("bare, ingest, want", [
    # the same rate throughout
    ([(100, 1.0, "", "", ""), (100, 1.0, "", "", "")], [(100, 1.0, "", "", "")], [1.0]),
    # the machine slowed down during the ingest: judged against the mean rate of the parses around it (100 and 50)
    ([(100, 1.0, "", "", ""), (100, 2.0, "", "", "")], [(100, 2.0, "", "", "")], [50 / 75]),
    # a round on a slower minute is judged against its own bare parses, not another round's
    ([(100, 1.0, "", "", ""), (100, 1.0, "", "", ""), (100, 2.0, "", "", ""), (100, 2.0, "", "", "")],
     [(100, 2.0, "", "", ""), (100, 2.5, "", "", "")], [0.5, 0.8]),
])
def test_dump_ingest_judges_each_round_against_its_own_bare_parses(bare, ingest, want):
    from bench.dump_ingest import round_ratios
    assert round_ratios(bare, ingest) == pytest.approx(want)
