"""`blackwidow stats` gives the same numbers on Cassandra and on SQLite after the same real harvest of the
local wiki, and those numbers are the ones the generator's histories imply."""
import io
import json
import time
from collections import Counter

import pytest

from blackwidow.stats import cli
from blackwidow.stats.filters import parse_filters
from tools.wikigen import BIG_TITLE, REVERT_TAG

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def all_edits(expected_edits):
    return [e for edits in expected_edits.values() for e in edits]


@pytest.fixture(scope="module")
def cases(expected_edits, all_edits, cassandra_harvest):
    """(stat, field, filter words) run on both stores."""
    busiest_day = Counter(e.day for e in all_edits).most_common(1)[0][0].isoformat()
    top_user = Counter(e.user for e in all_edits).most_common(1)[0][0]
    big_id = cassandra_harvest.page_ids[BIG_TITLE]
    year = expected_edits["Spider silk"][300].ts.year
    filters = [
        [], [f"title={BIG_TITLE}"], [f"pageid={big_id}"], [f"user={top_user}"], ["userid=0"],
        [f"tag={REVERT_TAG}"],
        ["size=5000", "sizematch=>"], ["size=300", "sizematch=<"], [f"date={busiest_day}"],
        [f"datestart={year}-01-01", f"dateend={year}-12-31"],
        ["title=Spider silk", f"datestart={year}-03-01", f"dateend={year}-09-30"],
        [f"title={BIG_TITLE}", f"user={top_user}"], ["title=Ünïcödé – 東京", "userid=0"],
        [f"title={BIG_TITLE}", f"tag={REVERT_TAG}", "size=3000", "sizematch=>"],
    ]
    out = [("count", None, f) for f in filters] + [("avg", None, f) for f in filters]
    out += [("mode", field, f) for field in ("title", "pageid", "user", "userid", "date", "size")
            for f in ([], ["title=Spider silk"], [f"datestart={year}-01-01", f"dateend={year}-12-31"])]
    return out


def test_every_statistic_is_the_same_on_both_stores(cases, cassandra_harvest, sqlite_harvest):
    wiki = cassandra_harvest.wiki
    timings = Counter()
    for stat, field, words in cases:
        results = []
        for h in (cassandra_harvest, sqlite_harvest):
            started = time.monotonic()
            results.append(cli.run(h.store, stat, parse_filters(words), wiki, field))
            timings[type(h.store).__name__] += time.monotonic() - started
        assert results[0] == results[1], (stat, field, words)
    print(f"\n{len(cases)} statistics: " + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()))


def test_statistics_agree_with_the_generator(expected_edits, all_edits, cassandra_harvest):
    h = cassandra_harvest

    def run(stat, words, field=None):
        return cli.run(h.store, stat, parse_filters(words), h.wiki, field)

    big = expected_edits[BIG_TITLE]
    assert run("count", [f"title={BIG_TITLE}"])["count"] == len(big)
    assert run("count", [])["count"] == len(all_edits)
    assert run("count", ["userid=0"])["count"] == sum(e.anon for e in all_edits)
    assert run("count", [f"tag={REVERT_TAG}"])["count"] == sum(REVERT_TAG in e.tags for e in all_edits)
    assert run("count", ["size=5000", "sizematch=>"])["count"] == sum(e.size > 5000 for e in all_edits)
    day, n = Counter(e.day for e in all_edits).most_common(1)[0]
    assert run("count", [f"date={day}"])["count"] == n
    avg = run("avg", [f"title={BIG_TITLE}"])
    span = (big[-1].day - big[0].day).days + 1
    assert (avg["revisions"], avg["days"], avg["avg_per_day"]) == (len(big), span, len(big) / span)
    users = Counter(e.user for e in big)
    top = max(users.values())
    got = run("mode", [f"title={BIG_TITLE}"], "user")
    assert (got["values"], got["count"], got["revisions"]) == \
        (sorted(u for u, c in users.items() if c == top), top, len(big))
    assert run("mode", [], "title")["values"] == [BIG_TITLE]


def test_the_command_prints_the_same_on_both_backends(cassandra_harvest, sqlite_harvest):
    envs = ({"BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": cassandra_harvest.location},
            {"BW_REVISIONS_SQLITE": sqlite_harvest.location})
    for argv in (["count", "title=Spider silk", "userid=0", "--format", "json"],
                 ["avg", "title=Tarantula", "--format", "table"],
                 ["mode", "date", f"pageid={cassandra_harvest.page_ids['Tarantula']}", "--format", "csv"]):
        printed = []
        for env in envs:
            out, err = io.StringIO(), io.StringIO()
            assert cli.main(argv + ["--wiki", cassandra_harvest.wiki], environ=env, out=out, err=err) == 0, \
                err.getvalue()
            printed.append(out.getvalue())
        assert printed[0] == printed[1], argv


def test_plot_of_a_harvested_article(cassandra_harvest, tmp_path):
    out = tmp_path / "big.png"
    env = {"BW_CASSANDRA_HOSTS": "127.0.0.1", "BW_CASSANDRA_KEYSPACE": cassandra_harvest.location}
    printed, err = io.StringIO(), io.StringIO()
    code = cli.main(["plot", "--title", BIG_TITLE, "--wiki", cassandra_harvest.wiki, "--out", str(out)],
                    environ=env, out=printed, err=err)
    assert code == 0, err.getvalue()
    assert json.loads(printed.getvalue())["out"] == str(out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
