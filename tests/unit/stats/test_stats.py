"""`blackwidow stats` on the SQLite revision store: filters, count, avg, mode, formats, errors, plot."""
import csv
import io
import json
import struct
from collections import Counter
from datetime import date, timedelta

import pytest

from blackwidow import cli as hub_cli
from blackwidow.stats import compute
from blackwidow.stats.cli import main
from blackwidow.stats.filters import FILTERS, Filters, parse_filters
from shared.errors import ValidationError
from shared.revisions.sqlite_store import SQLiteRevisionStore
from tests.revision_store_contract import make_history

WIKI, OTHER = "en.example.org", "de.example.org"


@pytest.fixture
def revisions():
    return (make_history(WIKI, 7, 60, title="Spider web")
            + make_history(WIKI, 8, 25, first_rev_id=5000, title="Orb weaver", step=timedelta(hours=5))
            + make_history(OTHER, 7, 10, first_rev_id=9000, title="Spinnennetz"))


@pytest.fixture
def db(tmp_path, revisions):
    path = tmp_path / "revisions.db"
    store = SQLiteRevisionStore(str(path))
    for key in sorted({(r.wiki, r.page_id) for r in revisions}):
        store.write([r for r in revisions if (r.wiki, r.page_id) == key])
    store.close()
    return path


@pytest.fixture
def store(db):
    s = SQLiteRevisionStore(str(db))
    yield s
    s.close()


def stats(db, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), environ={"BW_REVISIONS_SQLITE": str(db)}, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def day(r):
    return r.timestamp.date()


# -- filters -------------------------------------------------------------------------------------

@pytest.mark.parametrize("words, field, message", [
    (["colour=red"], "colour", "unknown filter 'colour'; allowed filters: " + ", ".join(FILTERS)),
    (["title"], "title", "is not key=value"),
    (["size=big"], "size", "size must be an integer"),
    (["pageid=-1"], "pageid", "must not be negative"),
    (["date=2024-13-01"], "date", "must be a date YYYY-MM-DD"),
    (["sizematch=>"], "sizematch", "needs a size filter"),
    (["size=5", "sizematch=>="], "sizematch", "sizematch must be one of > < ="),
    (["date=2024-01-01", "dateend=2024-02-01"], "date", "cannot be combined"),
    (["datestart=2024-02-01", "dateend=2024-01-01"], "datestart", "after dateend"),
    (["user=a", "user=b"], "user", "given twice"),
    (["user="], "user", "has no value"),
])
def test_bad_filters_are_refused_naming_the_filter(words, field, message):
    with pytest.raises(ValidationError) as caught:
        parse_filters(words)
    assert caught.value.field == field and message in caught.value.message


def test_filters_parse_to_typed_values():
    f = parse_filters(["title=Spider web", "pageid=7", "userid=0", "size=500", "sizematch=>",
                       "datestart=2023-02-01", "dateend=2023-02-28", "tag=visualeditor", "user=Editor1"])
    assert f == Filters(title="Spider web", pageid=7, user="Editor1", userid=0, tag="visualeditor", size=500,
                        sizematch=">", datestart=date(2023, 2, 1), dateend=date(2023, 2, 28))
    assert f.given()["datestart"] == "2023-02-01"


# -- count, avg, mode against plain Python over the same revisions ------------------------------

@pytest.mark.parametrize("words, keep", [
    ([], lambda r: True),
    (["title=Spider web"], lambda r: r.page_id == 7 and r.wiki == WIKI),
    (["pageid=8"], lambda r: r.page_id == 8),
    (["user=Editor1"], lambda r: r.user == "Editor1"),
    (["userid=12"], lambda r: r.user_id == 12),
    (["tag=visualeditor"], lambda r: "visualeditor" in r.tags),
    (["size=1000", "sizematch=>"], lambda r: r.size > 1000),
    (["size=1000", "sizematch=<"], lambda r: r.size < 1000),
    (["size=500"], lambda r: r.size == 500),
    (["date=2023-02-03"], lambda r: day(r) == date(2023, 2, 3)),
    (["datestart=2023-02-01", "dateend=2023-02-20"],
     lambda r: date(2023, 2, 1) <= day(r) <= date(2023, 2, 20)),
    (["title=Spider web", "datestart=2023-02-10", "user=Editor0"],
     lambda r: r.wiki == WIKI and r.page_id == 7 and day(r) >= date(2023, 2, 10) and r.user == "Editor0"),
    (["title=Orb weaver", "pageid=7"], lambda r: False),        # the title names another page
    (["title=No such page"], lambda r: False),
])
def test_count_matches_a_plain_filter_over_the_revisions(store, revisions, words, keep):
    want = sum(1 for r in revisions if keep(r))
    assert compute.count(compute.matching(store, parse_filters(words))) == {"count": want}


def test_wiki_option_limits_to_one_wiki(store, revisions):
    got = compute.count(compute.matching(store, parse_filters(["pageid=7"]), OTHER))
    assert got == {"count": 10}


def test_title_and_pageid_read_only_that_pages_history(store, revisions):
    class NoScan:
        def __getattr__(self, name):
            return getattr(store, name)

        def revisions(self, wiki=None):
            raise AssertionError("a page filter must not scan every revision")

    f = parse_filters(["title=Spider web", "date=2023-02-03"])
    assert compute.count(compute.matching(NoScan(), f, WIKI))["count"] == \
        sum(1 for r in revisions if r.wiki == WIKI and r.page_id == 7 and day(r) == date(2023, 2, 3))


def test_avg_over_a_given_range_and_over_the_revisions_own_span(store, revisions):
    page = [r for r in revisions if r.wiki == WIKI and r.page_id == 8]
    f = parse_filters(["pageid=8", "datestart=2023-01-01", "dateend=2023-01-31"])
    in_range = [r for r in page if date(2023, 1, 1) <= day(r) <= date(2023, 1, 31)]
    got = compute.average_per_day(compute.matching(store, f, WIKI), f)
    assert got == {"revisions": len(in_range), "days": 31, "first_day": "2023-01-01",
                   "last_day": "2023-01-31", "avg_per_day": len(in_range) / 31}
    f = parse_filters(["pageid=8"])
    got = compute.average_per_day(compute.matching(store, f, WIKI), f)
    span = (day(page[-1]) - day(page[0])).days + 1
    assert (got["revisions"], got["days"], got["avg_per_day"]) == (25, span, 25 / span)
    empty = parse_filters(["user=nobody"])
    assert compute.average_per_day(compute.matching(store, empty), empty)["avg_per_day"] == 0.0


@pytest.mark.parametrize("field, value", [
    ("title", lambda r: r.title), ("pageid", lambda r: r.page_id), ("user", lambda r: r.user),
    ("userid", lambda r: r.user_id), ("date", lambda r: day(r).isoformat()), ("size", lambda r: r.size)])
def test_mode_of_each_field(store, revisions, field, value):
    counts = Counter(value(r) for r in revisions if value(r) is not None)
    top = max(counts.values())
    got = compute.mode(compute.matching(store, Filters()), field)
    assert got == {"field": field, "values": sorted(v for v, n in counts.items() if n == top), "count": top,
                   "revisions": len(revisions)}


# -- the command ---------------------------------------------------------------------------------

def test_count_in_every_format(db):
    code, out, _ = stats(db, "count", "title=Spider web", "--wiki", "https://en.example.org/w/api.php")
    assert code == 0
    assert json.loads(out) == {"stat": "count", "wiki": WIKI, "filters": {"title": "Spider web"}, "count": 60}
    code, out, _ = stats(db, "count", "title=Spider web", "--format", "table")
    assert out == "count\n60\n"
    code, out, _ = stats(db, "avg", "pageid=8", "datestart=2023-01-30", "dateend=2023-02-02",
                         "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["revisions", "days", "first_day", "last_day", "avg_per_day"] and rows[1][1] == "4"


def test_mode_lists_every_tied_value(db):
    code, out, _ = stats(db, "mode", "user", "pageid=8", "--wiki", WIKI, "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["user", "count"] and len(rows) >= 2
    code, out, _ = stats(db, "mode", "user", "pageid=8", "--wiki", WIKI, "--format", "table")
    assert out.splitlines()[0].split() == ["user", "count"]


def test_unknown_filter_and_field_exit_2_listing_the_allowed_ones(db):
    code, out, err = stats(db, "count", "color=red")
    assert (code, out) == (2, "")
    assert err.strip() == ("blackwidow stats: unknown filter 'color'; allowed filters: "
                           "title, pageid, user, userid, tag, size, sizematch, date, datestart, dateend")
    code, _, err = stats(db, "mode", "tag")
    assert code == 2 and "allowed fields: title, pageid, user, userid, date, size" in err


def test_missing_store_is_an_error_not_an_empty_answer(tmp_path):
    code, _, err = stats(tmp_path / "absent.db", "count")
    assert code == 2 and "no revision store at" in err
    assert not (tmp_path / "absent.db").exists()


def test_hub_cli_delegates_stats(db, monkeypatch, capsys):
    monkeypatch.setenv("BW_REVISIONS_SQLITE", str(db))
    assert hub_cli.main(["stats", "count", "user=Editor2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] > 0
    with pytest.raises(SystemExit):
        hub_cli.main(["stats", "--help"])
    assert "count,avg,mode,plot" in capsys.readouterr().out


# -- plot ----------------------------------------------------------------------------------------

def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_writes_a_png(db, tmp_path):
    out = tmp_path / "plots" / "web.png"
    code, text, err = stats(db, "plot", "--title", "Spider web", "--wiki", WIKI, "--out", str(out))
    assert code == 0, err
    assert json.loads(text)["out"] == str(out)
    width, height = png_size(out)
    assert (width, height) == (1200, 700)


def test_plot_of_an_unknown_or_ambiguous_title(db, tmp_path):
    code, _, err = stats(db, "plot", "--title", "Nothing here", "--out", str(tmp_path / "x.png"))
    assert code == 2 and "no stored article titled 'Nothing here'" in err
    store = SQLiteRevisionStore(str(db))
    store.write(make_history(OTHER, 70, 3, first_rev_id=20000, title="Spider web"))
    store.close()
    code, _, err = stats(db, "plot", "--title", "Spider web", "--out", str(tmp_path / "x.png"))
    assert code == 2 and "choose one with --wiki" in err
