"""`blackwidow stats count|avg|mode|plot`: revision statistics on the configured revision store.

The store is the one the spawns write: Cassandra when BW_CASSANDRA_HOSTS is set, else the SQLite file
(shared.revisions.factory.open_store). Bad input exits 2 with one line naming the problem; a store
failure exits 1.
"""
import argparse
import csv
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Mapping

from blackwidow.stats import compute
from blackwidow.stats.filters import FILTERS, Filters, parse_filters
from shared.errors import BlackWidowError, ConfigError, ValidationError
from shared.hashing import wiki_key
from shared.revisions.store import StoreError

FORMATS = ("json", "table", "csv")
_META = ("stat", "wiki", "filters", "field")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="blackwidow stats", description="Statistics over harvested revisions.",
        epilog=f"filters (key=value): {', '.join(FILTERS)}; sizematch is one of > < = (default =)")
    stats = parser.add_subparsers(dest="stat", required=True)
    for name, help_text in (("count", "number of matching revisions"),
                            ("avg", "average matching revisions per day over the date range"),
                            ("mode", "most frequent value of a field among matching revisions")):
        p = stats.add_parser(name, help=help_text)
        if name == "mode":
            p.add_argument("field", help=f"one of {', '.join(compute.MODE_FIELDS)}")
        p.add_argument("filters", nargs="*", metavar="FILTER=VALUE", help=", ".join(FILTERS))
        _wiki_option(p)
        p.add_argument("--format", choices=FORMATS, default="json")
    p = stats.add_parser("plot", help="PNG of an article's revisions per day and size over time")
    p.add_argument("--title", required=True)
    p.add_argument("--out", help="PNG file to write (default: the title, made file-safe, .png)")
    _wiki_option(p)
    p = stats.add_parser("text", help="the stored wikitext of one revision")
    p.add_argument("rev_id", type=int, help="revision id")
    _wiki_option(p)
    return parser


def _wiki_option(p) -> None:
    p.add_argument("--wiki", help="only this wiki: host[:port] or its api.php URL "
                                  "(default: every stored wiki)")


def main(argv: list[str] | None = None, environ: Mapping[str, str] = os.environ, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    args = build_parser().parse_args(argv)
    wiki = _wiki(args.wiki)
    try:
        filters = Filters(title=args.title) if args.stat == "plot" else \
            Filters() if args.stat == "text" else parse_filters(args.filters)
        if args.stat == "mode":
            compute.check_mode_field(args.field)
        store = open_store(environ)
    except (ValidationError, ConfigError) as exc:
        print(f"blackwidow stats: {exc}", file=err)
        return 2
    try:
        if args.stat == "text":
            print(_text(store, wiki, args.rev_id), file=out, end="")
            return 0
        if args.stat == "plot":
            path = _plot(store, filters, wiki, args.out)
            print(json.dumps({"stat": "plot", "title": args.title, "out": str(path)}), file=out)
            return 0
        result = run(store, args.stat, filters, wiki, getattr(args, "field", None))
    except BlackWidowError as exc:
        print(f"blackwidow stats: {exc}", file=err)
        return 2
    except StoreError as exc:
        print(f"blackwidow stats: reading the revision store failed: {exc}", file=err)
        return 1
    finally:
        store.close()
    print(render(result, args.format), file=out, end="")
    return 0


def open_store(environ: Mapping[str, str]):
    from shared.config import CommonConfig, common_from_env
    from shared.revisions.factory import open_store as open_revision_store

    env = dict(environ)
    # statistics never talk to the hub or a spawn, so the shared secret is not needed here
    env["BW_NODE_SECRET"] = env.get("BW_NODE_SECRET") or "unused"
    config = CommonConfig(**common_from_env(env))
    if not config.cassandra_hosts and not os.path.exists(config.revisions_sqlite):
        # opening would create an empty store and report zeros
        raise ConfigError(f"no revision store at {config.revisions_sqlite} "
                          "(set BW_REVISIONS_SQLITE, BW_DATA_DIR or BW_CASSANDRA_HOSTS)")
    return open_revision_store(config)


def run(store, stat: str, filters: Filters, wiki: str | None, field: str | None = None) -> dict:
    revisions = compute.matching(store, filters, wiki)
    if stat == "count":
        values = compute.count(revisions)
    elif stat == "avg":
        values = compute.average_per_day(revisions, filters)
    elif field is None:
        raise ValidationError("'field' is required for mode", "field")
    else:
        values = compute.mode(revisions, field)
    return {"stat": stat, "wiki": wiki, "filters": filters.given(), **values}


def _plot(store, filters: Filters, wiki: str | None, out: str | None) -> Path:
    from blackwidow.stats.plot import plot_history

    title = filters.title
    if title is None:
        raise ValidationError("plot needs an article title", "title")
    pages = compute.selected_pages(store, filters, wiki)
    if not pages:
        raise ValidationError(f"no stored article titled {filters.title!r}", "title")
    if len(pages) > 1:
        raise ValidationError(f"{filters.title!r} is stored for several wikis "
                              f"({', '.join(w for w, _ in pages)}); choose one with --wiki", "wiki")
    (w, page_id), = pages
    target = Path(out) if out else Path((re.sub(r"[^\w.-]+", "_", title).strip("_.") or "article") + ".png")
    return plot_history(list(store.history(w, page_id)), title, target)


def _text(store, wiki: str | None, rev_id: int) -> str:
    """A revision's wikitext: two single-partition reads on Cassandra (its revision_text row, then its
    group's dictionary and blob), one row on SQLite."""
    if wiki is None:
        wikis = store.wikis()
        if len(wikis) != 1:
            raise ValidationError(f"the store holds {len(wikis)} wikis; choose one with --wiki", "wiki")
        wiki = wikis[0]
    text = store.content(wiki, rev_id)
    if text is None:
        raise ValidationError(f"no stored text for revision {rev_id} of {wiki}", "rev_id")
    return text


def _wiki(value: str | None) -> str | None:
    if not value:
        return None
    return wiki_key(value) if "://" in value else value


def render(result: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(result, ensure_ascii=False) + "\n"
    columns, rows = tabular(result)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return buf.getvalue()
    cells = [columns] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n" for row in cells)


def tabular(result: dict) -> tuple[list[str], list[list]]:
    """Columns and rows: one row per tied value for mode, else one row of the numbers."""
    if result["stat"] == "mode":
        return [result["field"], "count"], [[v, result["count"]] for v in result["values"]]
    columns = [k for k in result if k not in _META]
    return columns, [[result[k] for k in columns]]
