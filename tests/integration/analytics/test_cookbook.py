"""Every named statement of docs/analysts.md, prepared and run on Cassandra after a real harvest of the
local wiki, with each recipe's answer compared to the one computed from the generator's histories.

Local page and revision ids are the wiki's own (assigned at import), so rows are matched by title and
timestamp; ids are checked against what the wiki's API reports.
"""
from collections import Counter, defaultdict
from datetime import date, datetime, timezone

import pytest

from blackwidow.analytics.cookbook import Cookbook, load_statements, year_months
from shared.revisions.derived import utc
from tools.wikigen import BIG_TITLE, REVERT_TAG

pytestmark = pytest.mark.integration

BUSY_TITLE = "Orb-weaver spider"


class RecordingCookbook(Cookbook):
    """Notes which statements a check ran, so each check proves it exercised its own statement."""

    def __init__(self, session):
        super().__init__(session)
        self.used: set[str] = set()

    def run(self, name, **params):
        self.used.add(name)
        return super().run(name, **params)


@pytest.fixture(scope="module")
def cookbook(cassandra_cluster, cassandra_harvest):
    session = cassandra_cluster.connect(cassandra_harvest.location)
    try:
        yield RecordingCookbook(session)
    finally:
        session.shutdown()


@pytest.fixture(scope="module")
def all_edits(expected_edits):
    return [e for edits in expected_edits.values() for e in edits]


def ts(value) -> datetime:
    return utc(value)


def tags(row) -> tuple:
    return tuple(sorted(row.tags or ()))


def newest_first(edits):
    return sorted(edits, key=lambda e: e.ts, reverse=True)


# -- one check per statement -----------------------------------------------------------------------

def check_page_by_title(cb, h, expected, info, all_edits):
    for title, (page_id, _) in info.items():
        assert cb.page_id(h.wiki, title) == page_id == h.page_ids[title]
    assert cb.page_id(h.wiki, "No such article") is None


def check_page_months(cb, h, expected, info, all_edits):
    for title, edits in expected.items():
        per_month = Counter(e.month for e in edits)
        got = [(r.month, r.revisions) for r in cb.run("page_months", wiki=h.wiki, page_id=info[title][0])]
        assert got == sorted(per_month.items(), reverse=True), title


def check_history_month(cb, h, expected, info, all_edits):
    for title, edits in expected.items():
        got = [(ts(r.rev_ts), r.user_text, r.anon, r.minor, r.size, r.size_delta, r.comment, tags(r))
               for r in cb.full_history(h.wiki, info[title][0])]
        assert got == [(e.ts, e.user, e.anon, e.minor, e.size, e.delta, e.comment, e.tags)
                       for e in reversed(edits)], title
    # recipe 9 over one article: the largest size changes, ties to the older revision
    big = expected[BIG_TITLE]
    want = sorted(big, key=lambda e: (-abs(e.delta), e.ts))[:10]
    got = cb.largest_changes(h.wiki, info[BIG_TITLE][0], 10)
    assert [(ts(r.rev_ts), r.size_delta) for r in got] == [(e.ts, e.delta) for e in want]


def check_history_between(cb, h, expected, info, all_edits):
    big = expected[BIG_TITLE]
    since, until = big[1000].ts, big[3000].ts
    got = cb.history_between(h.wiki, info[BIG_TITLE][0], since, until)
    assert [(ts(r.rev_ts), r.user_text, r.size) for r in got] == \
        [(e.ts, e.user, e.size) for e in reversed(big[1000:3000])]
    busy = expected[BUSY_TITLE]
    year = busy[len(busy) // 2].ts.year
    since, until = datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc)
    got = cb.history_between(h.wiki, info[BUSY_TITLE][0], since, until)
    want = [e for e in busy if since <= e.ts < until]
    assert want and [(ts(r.rev_ts), r.size_delta) for r in got] == [(e.ts, e.delta) for e in reversed(want)]


def check_edits_per_day(cb, h, expected, info, all_edits):
    for title in (BIG_TITLE, BUSY_TITLE, "Cobweb"):
        per_day, net = Counter(), Counter()
        for e in expected[title]:
            per_day[e.day] += 1
            net[e.day] += e.delta
        want = [(day, per_day[day], net[day]) for day in sorted(per_day, reverse=True)]
        assert cb.edits_per_day(h.wiki, info[title][0]) == want, title


def check_month_summary(cb, h, expected, info, all_edits):
    big = expected[BIG_TITLE]
    month, n = Counter(e.month for e in big).most_common(1)[0]
    in_month = [e for e in big if e.month == month]
    row = cb.month_summary(h.wiki, info[BIG_TITLE][0], month)
    assert (row.edits, ts(row.first_edit), ts(row.last_edit), row.net_bytes) == \
        (n, in_month[0].ts, in_month[-1].ts, sum(e.delta for e in in_month))


def check_editors_month(cb, h, expected, info, all_edits):
    big = expected[BIG_TITLE]
    year, _ = Counter(e.ts.year for e in big).most_common(1)[0]
    counts = Counter(e.user for e in big if e.ts.year == year)
    want = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]
    assert cb.top_editors(h.wiki, info[BIG_TITLE][0], year, 10) == want
    assert cb.top_editors(h.wiki, info[BIG_TITLE][0], 1990) == []
    # recipe 10 over every article: anonymous versus registered
    for title, edits in expected.items():
        anonymous = sum(e.anon for e in edits)
        assert cb.anon_share(h.wiki, info[title][0]) == {
            "anonymous": anonymous, "registered": len(edits) - anonymous,
            "anonymous_share": anonymous / len(edits)}, title


def check_user_month(cb, h, expected, info, all_edits):
    by_user_month = Counter((e.user, e.month) for e in all_edits)
    registered = next(k for k, _ in by_user_month.most_common() if not _is_ip(k[0]))
    ip = next(k for k, _ in by_user_month.most_common() if _is_ip(k[0]))
    for user, month in (registered, ip):
        got = cb.user_month(h.wiki, user, month)
        want = newest_first(e for e in all_edits if (e.user, e.month) == (user, month))
        assert [ts(r.rev_ts) for r in got] == sorted((ts(r.rev_ts) for r in got), reverse=True)
        assert sorted((ts(r.rev_ts), r.title, r.minor, r.size, r.size_delta, r.comment) for r in got) == \
            sorted((e.ts, e.title, e.minor, e.size, e.delta, e.comment) for e in want), user


def check_day_shard(cb, h, expected, info, all_edits):
    day, n = Counter(e.day for e in all_edits).most_common(1)[0]
    got = cb.day_edits(h.wiki, day)
    want = [e for e in all_edits if e.day == day]
    assert len(got) == n > 1
    assert [ts(r.rev_ts) for r in got] == sorted((ts(r.rev_ts) for r in got), reverse=True)
    assert sorted((ts(r.rev_ts), r.title, r.user_text, r.anon, r.size, r.size_delta) for r in got) == \
        sorted((e.ts, e.title, e.user, e.anon, e.size, e.delta) for e in want)
    # recipe 9 over a day, across the wiki
    top = cb.largest_changes_on_day(h.wiki, day, 5)
    assert [(ts(r.rev_ts), r.size_delta) for r in top] == \
        [(e.ts, e.delta) for e in sorted(want, key=lambda e: (-abs(e.delta), e.ts))[:5]]


def check_day_count(cb, h, expected, info, all_edits):
    per_day = Counter(e.day for e in all_edits)
    for day, n in per_day.most_common(3) + [(date(1999, 1, 1), 0)]:
        assert cb.day_count(h.wiki, day) == n, day


def check_latest_revisions(cb, h, expected, info, all_edits):
    got = {r.page_id: r for r in cb.latest_revisions(h.wiki, [pid for pid, _ in info.values()])}
    assert len(got) == len(expected)
    for title, edits in expected.items():
        page_id, last_rev_id = info[title]
        row = got[page_id]
        assert (row.title, row.latest_rev_id, ts(row.latest_rev_ts), row.latest_size, row.revisions) == \
            (title, last_rev_id, edits[-1].ts, edits[-1].size, len(edits)), title


def check_tag_month(cb, h, expected, info, all_edits):
    tagged = [e for e in all_edits if REVERT_TAG in e.tags]
    assert len(tagged) > 50
    by_month = defaultdict(list)
    for e in tagged:
        by_month[e.month].append(e)
    for month, edits in by_month.items():
        got = cb.tagged(h.wiki, REVERT_TAG, [month])
        assert sorted((ts(r.rev_ts), r.title, r.user_text, r.anon, r.size, r.size_delta) for r in got) == \
            sorted((e.ts, e.title, e.user, e.anon, e.size, e.delta) for e in edits), month
    year, _ = Counter(e.ts.year for e in tagged).most_common(1)[0]
    got = cb.tagged(h.wiki, REVERT_TAG, year_months(year))
    assert [ts(r.rev_ts) for r in got] == sorted((e.ts for e in tagged if e.ts.year == year), reverse=True)
    assert cb.tagged(h.wiki, "no-such-tag", year_months(year)) == []


def check_revision_by_id(cb, h, expected, info, all_edits):
    for title, edits in expected.items():
        page_id, last_rev_id = info[title]
        row = cb.revision(h.wiki, last_rev_id)
        assert (row.page_id, ts(row.rev_ts), row.size) == (page_id, edits[-1].ts, edits[-1].size), title
    assert cb.revision(h.wiki, 10**12) is None


def _texts_written(cb, h) -> list:
    """A page history with near-copies and a revert, written with content into the harvest's keyspace
    under a wiki key of its own (the harvest itself asks for no content)."""
    import dataclasses
    from shared.revisions.cassandra_store import CassandraRevisionStore
    from tests.revision_store_contract import make_history
    texts = ["== Silk ==\n" + "Spider silk is a protein fibre. " * 400 + "".join(f"Edit {k}.\n" for k in range(i))
             for i in range(12)]
    texts[7] = texts[5]
    revisions = [dataclasses.replace(r, content=t) for r, t in zip(make_history("texts.cookbook", 3, 12), texts)]
    CassandraRevisionStore(cb._session, h.location).write(revisions)
    return revisions


def check_revision_text(cb, h, expected, info, all_edits):
    revisions = _texts_written(cb, h)
    assert [cb.revision_text("texts.cookbook", r.rev_id) for r in revisions] == [r.content for r in revisions]
    assert cb.revision_text("texts.cookbook", 10**12) is None
    _, last_rev_id = next(iter(info.values()))
    assert cb.revision_text(h.wiki, last_rev_id) is None          # harvested without content


def check_text_blobs(cb, h, expected, info, all_edits):
    revisions = _texts_written(cb, h)
    where = cb.run("revision_text", wiki="texts.cookbook", rev_id=revisions[7].rev_id)[0]
    assert where.blob == revisions[5].rev_id                         # the revert points at the earlier blob
    rows = cb.run("text_blobs", wiki="texts.cookbook", page_id=3, grp=where.grp, blob=where.blob)
    assert [(r.blob, r.codec) for r in rows] == [(0, "zstd"), (where.blob, "zstd-dict")]
    assert cb.revision_text("texts.cookbook", revisions[7].rev_id) == revisions[7].content


def _is_ip(user: str) -> bool:
    return user.replace(".", "").isdigit() or ":" in user


CHECKS = {name[len("check_"):]: fn for name, fn in globals().items() if name.startswith("check_")}


def test_every_statement_of_the_document_has_a_check():
    assert sorted(CHECKS) == sorted(load_statements())
    assert len(CHECKS) >= 10


@pytest.mark.parametrize("name", sorted(load_statements()))
def test_statement_answers_as_the_generator_expects(name, cookbook, cassandra_harvest, expected_edits,
                                                    wiki_page_info, all_edits):
    cookbook.used.clear()
    CHECKS[name](cookbook, cassandra_harvest, expected_edits, wiki_page_info, all_edits)
    assert name in cookbook.used
