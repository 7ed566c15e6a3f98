"""`blackwidow`: serve (gunicorn admin API), migrate, scheduler, and `admin …` wrapping the REST calls.

The admin commands read BW_HUB_URL (default http://127.0.0.1:8700) and BW_ADMIN_TOKEN, and print the
hub's JSON answer; a refusal prints the error JSON on stderr and exits 1. `subs pages` exits 3 when the
hub refused some of the titles (its answer, on stdout, lists them).
"""
import argparse
import json
import os
import sys
from pathlib import Path

DEFAULT_HUB_URL = "http://127.0.0.1:8700"


def _serve(args) -> int:
    from blackwidow import migrate
    from shared.config import HubConfig
    from shared.errors import ConfigError

    try:
        config = HubConfig.from_env()     # fail here, readably, rather than in every worker
    except ConfigError as exc:
        print(f"blackwidow: {exc}", file=sys.stderr)
        return 2
    if not args.no_migrate:
        try:
            migrate.upgrade(config.database_url)
        except Exception as exc:     # unreachable database, bad URL: say so in one line, not a traceback
            print(f"blackwidow: cannot migrate the configuration store: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            return 1
    cmd = [sys.executable, "-m", "gunicorn", "--config", "python:blackwidow.gunicorn_conf"]
    if args.bind:
        cmd += ["--bind", args.bind]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    os.execv(cmd[0], cmd)
    return 0   # not reached


def _migrate(args) -> int:
    from blackwidow import migrate
    from shared.config import DEFAULT_DATA_DIR, default_database_url

    url = args.database_url or os.environ.get("BW_DATABASE_URL") or \
        default_database_url(os.environ.get("BW_DATA_DIR") or DEFAULT_DATA_DIR)
    migrate.upgrade(url)
    print(json.dumps({"revision": migrate.current(url)}))
    return 0


def _scheduler(args) -> int:
    from blackwidow import scheduler    # imported late: it pulls in APScheduler and the spawn client
    from shared.errors import ConfigError

    try:
        return scheduler.main(args.args) or 0
    except ConfigError as exc:
        print(f"blackwidow: {exc}", file=sys.stderr)
        return 2


def _stats(argv: list[str]) -> int:
    from blackwidow.stats.cli import main as stats_main
    return stats_main(argv)


# --- admin ------------------------------------------------------------------------------------------

def _quota(text: str):
    if text.lower() in ("none", "null", "unlimited"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("quota must be an integer or 'none'") from None


_UNSET = argparse.SUPPRESS     # options left out of a request body when not given


def _only_set(**values) -> dict:
    return {k: v for k, v in values.items() if v is not _UNSET}


def _read_titles(path: str) -> list[str]:
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _admin_call(args, client):
    a = args
    match (a.noun, a.verb):
        case ("tenants", "create"):
            return client.call("POST", "/v1/tenants", body=_only_set(name=a.name, quota=a.quota))
        case ("tenants", "list"):
            return _listing(client, "/v1/tenants", a, {})
        case ("tenants", "get"):
            return client.call("GET", f"/v1/tenants/{a.id}")
        case ("tenants", "patch"):
            body = _only_set(name=a.name, quota=a.quota, weight=a.weight)
            return client.call("PATCH", f"/v1/tenants/{a.id}", body=body)
        case ("tenants", "delete"):
            return client.call("DELETE", f"/v1/tenants/{a.id}")
        case ("subs", "add"):
            return client.call("POST", "/v1/subscriptions", body=_only_set(
                tenant_id=a.tenant, wiki=a.wiki, title=a.title, quota=a.quota, content=a.content))
        case ("subs", "bulk"):
            items = [{"title": t} for t in _read_titles(a.file)]
            return client.call("POST", "/v1/subscriptions/bulk", body=_only_set(
                tenant_id=a.tenant, wiki=a.wiki, quota=a.quota, content=a.content, items=items))
        case ("subs", "pages"):
            return client.call("POST", "/v1/subscriptions", body=_only_set(
                kind="pages", tenant_id=a.tenant, wiki=a.wiki, titles=_read_titles(a.file),
                case="case-sensitive" if a.case_sensitive else _UNSET, quota=a.quota, content=a.content))
        case ("subs", "list"):
            filters = {k: v for k, v in (("tenant_id", a.tenant), ("state", a.state), ("node", a.node)) if v}
            return _listing(client, "/v1/subscriptions", a, filters)
        case ("subs", "get"):
            return client.call("GET", f"/v1/subscriptions/{a.id}")
        case ("subs", "patch"):
            return client.call("PATCH", f"/v1/subscriptions/{a.id}", body=_only_set(
                enabled=a.enabled, quota=a.quota, content=a.content))
        case ("subs", "delete"):
            return client.call("DELETE", f"/v1/subscriptions/{a.id}")
        case ("sets", "add"):
            kind = "category" if a.category is not _UNSET else "namespace" if a.namespace else "wiki"
            return client.call("POST", "/v1/subscriptions", body=_only_set(
                kind=kind, tenant_id=a.tenant, wiki=a.wiki, dumps=a.dumps or _UNSET,
                namespaces=a.namespace or _UNSET, dbname=a.dbname, content=a.content, parallel=a.parallel,
                dumped_at=a.dumped_at, category=a.category, depth=a.depth, census_interval_s=a.census_interval))
        case ("sets", "list"):
            return client.call("GET", "/v1/sets", params={"tenant_id": a.tenant} if a.tenant else None)
        case ("sets", "get"):
            return client.call("GET", f"/v1/sets/{a.id}")
        case ("sets", "stop" | "resume"):
            return client.call("PATCH", f"/v1/sets/{a.id}", body={"enabled": a.verb == "resume"})
        case ("sets", "census-interval"):
            return client.call("PATCH", f"/v1/sets/{a.id}", body={"census_interval_s": a.seconds})
        case ("sets", "delete"):
            return client.call("DELETE", f"/v1/sets/{a.id}")
        case ("nodes", "list"):
            return client.call("GET", "/v1/nodes")
        case ("nodes", "get"):
            return client.call("GET", f"/v1/nodes/{a.id}")
        case ("identities", "list"):
            return client.call("GET", "/v1/identities")
        case ("identities", "show"):
            return client.call("GET", f"/v1/identities/{a.host}")
        case ("identities", "set"):
            body = _only_set(credential=a.credential, in_flight=a.in_flight, per_s=a.per_s, per_min=a.per_min,
                             slow_after_s=a.slow_after_s, slow_wait_s=a.slow_wait_s, maxlag=a.maxlag)
            if a.resume:
                body["paused_until"] = None
            return client.call("PUT" if a.replace else "PATCH", f"/v1/identities/{a.host}", body=body)
    raise AssertionError(f"unhandled command {a.noun} {a.verb}")


def _listing(client, path: str, args, filters: dict):
    if args.all:
        return {"items": list(client.pages(path, {**filters, "limit": args.limit or 1000})),
                "next_cursor": None}
    params = dict(filters)
    if args.limit:
        params["limit"] = args.limit
    if args.cursor:
        params["cursor"] = args.cursor
    return client.call("GET", path, params=params)


def _admin(args) -> int:
    from blackwidow.admin_client import AdminClient, AdminError
    from shared.http import make_session

    token = os.environ.get("BW_ADMIN_TOKEN")
    if not token:
        print("blackwidow: BW_ADMIN_TOKEN is missing and has no default", file=sys.stderr)
        return 2
    hub = args.hub or os.environ.get("BW_HUB_URL") or DEFAULT_HUB_URL
    client = AdminClient(make_session("blackwidow-admin/0.1"), hub, token)
    try:
        answer = _admin_call(args, client)
    except AdminError as exc:
        print(json.dumps(exc.body, indent=2), file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as exc:      # a titles file that cannot be read: nothing was sent
        print(f"blackwidow: {exc}", file=sys.stderr)
        return 2
    if answer is not None:
        print(json.dumps(answer, indent=2))
    partial = (args.noun, args.verb) == ("subs", "pages") and bool(answer["refused"])
    return 3 if partial else 0


def _id(p) -> None:
    p.add_argument("id")


def _list_opts(p) -> None:
    p.add_argument("--limit", type=int)
    p.add_argument("--cursor")
    p.add_argument("--all", action="store_true", help="follow next_cursor and print every item")


def _admin_parser(sub) -> None:
    admin = sub.add_parser("admin", help="call the admin API (BW_HUB_URL, BW_ADMIN_TOKEN)")
    admin.add_argument("--hub", help=f"hub base URL (default: $BW_HUB_URL or {DEFAULT_HUB_URL})")
    nouns = admin.add_subparsers(dest="noun", required=True)

    tenants = nouns.add_parser("tenants").add_subparsers(dest="verb", required=True)
    p = tenants.add_parser("create")
    p.add_argument("--name", required=True)
    p.add_argument("--quota", type=_quota, default=_UNSET, help="max revisions, or 'none'")
    _list_opts(tenants.add_parser("list"))
    _id(tenants.add_parser("get"))
    p = tenants.add_parser("patch")
    _id(p)
    p.add_argument("--name", default=_UNSET)
    p.add_argument("--quota", type=_quota, default=_UNSET)
    p.add_argument("--weight", type=float, default=_UNSET, help="share of upstream slot-time (> 0)")
    _id(tenants.add_parser("delete"))

    subs = nouns.add_parser("subs", help="subscriptions").add_subparsers(dest="verb", required=True)
    for verb in ("add", "bulk", "pages"):
        p = subs.add_parser(verb, help={"bulk": "many titles, all or nothing",
                                        "pages": "many titles, each created or refused on its own"}.get(verb))
        p.add_argument("--tenant", required=True, help="tenant id")
        p.add_argument("--wiki", required=True, help="the wiki's api.php URL")
        p.add_argument("--quota", type=_quota, default=_UNSET)
        p.add_argument("--content", action="store_true", default=_UNSET, help="fetch wikitext too")
        if verb == "add":
            p.add_argument("--title", required=True)
        else:
            p.add_argument("file", help="titles, one per line ('-' for stdin)")
        if verb == "pages":
            p.add_argument("--case-sensitive", action="store_true",
                           help="the wiki tells 'apple' from 'Apple' (Wiktionary); by default the first "
                                "letter's case is not a difference")
    p = subs.add_parser("list")
    p.add_argument("--tenant")
    p.add_argument("--state")
    p.add_argument("--node")
    _list_opts(p)
    _id(subs.add_parser("get"))
    p = subs.add_parser("patch")
    _id(p)
    p.add_argument("--enable", dest="enabled", action="store_true", default=_UNSET)
    p.add_argument("--disable", dest="enabled", action="store_false", default=_UNSET)
    p.add_argument("--quota", type=_quota, default=_UNSET)
    p.add_argument("--content", dest="content", action="store_true", default=_UNSET)
    p.add_argument("--no-content", dest="content", action="store_false", default=_UNSET)
    _id(subs.add_parser("delete"))

    _sets_parser(nouns)
    nodes = nouns.add_parser("nodes").add_subparsers(dest="verb", required=True)
    nodes.add_parser("list")
    _id(nodes.add_parser("get"))
    _identities_parser(nouns)


def _sets_parser(nouns) -> None:
    sets = nouns.add_parser("sets", help="whole wikis, namespaces and categories (docs/sets.md)")
    verbs = sets.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("add", help="subscribe a tenant to a whole wiki, some namespaces or a category")
    p.add_argument("--tenant", required=True, help="tenant id")
    p.add_argument("--wiki", required=True, help="the wiki's api.php URL")
    p.add_argument("--dbname", default=_UNSET, help="the dumps' <siteinfo> dbname, e.g. chwiki (checked)")
    p.add_argument("--content", action="store_true", default=_UNSET, help="store wikitext too")
    p.add_argument("--parallel", type=int, default=_UNSET, help="files read at once (default 2)")
    p.add_argument("--namespace", type=int, action="append", default=[],
                   help="only this namespace's pages (repeat for several): a namespace set; default: the whole wiki")
    p.add_argument("--dumped-at", default=_UNSET,
                   help="when the dump was taken (ISO 8601); default: the date in the URLs' paths")
    p.add_argument("--category", default=_UNSET,
                   help="only this category's pages, as its members change: a category set (dumps optional)")
    p.add_argument("--depth", type=int, default=_UNSET, help="with --category: levels of subcategories that count")
    p.add_argument("--census-interval", type=int, default=_UNSET,
                   help="seconds between the set's censuses (0: none; default: the hub's BW_CENSUS_INTERVAL_S)")
    p.add_argument("dumps", nargs="*", help="dump file URLs, in order")
    verbs.add_parser("list").add_argument("--tenant")
    for verb in ("get", "stop", "resume", "delete"):
        _id(verbs.add_parser(verb))
    p = verbs.add_parser("census-interval", help="seconds between the set's censuses (docs/dumps.md)")
    _id(p)
    p.add_argument("seconds", type=_seconds_or_default, help="0: no census; 'default': the hub's BW_CENSUS_INTERVAL_S")


def _seconds_or_default(text: str) -> int | None:
    return None if text == "default" else int(text)


def _identities_parser(nouns) -> None:
    identities = nouns.add_parser("identities", help="upstream limits per wiki host (docs/upstream.md)")
    verbs = identities.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list")
    verbs.add_parser("show").add_argument("host", help="the wiki's host[:port], e.g. en.wikipedia.org")
    p = verbs.add_parser("set", help="change limits (PATCH); --replace sets all of them (PUT)")
    p.add_argument("host")
    p.add_argument("--credential", type=_name_or_none, default=_UNSET,
                   help="credential name in the spawns' credentials file, or 'none'")
    p.add_argument("--in-flight", type=int, default=_UNSET)
    p.add_argument("--per-s", type=float, default=_UNSET)
    p.add_argument("--per-min", type=_quota, default=_UNSET, help="requests per minute, or 'none'")
    p.add_argument("--slow-after-s", type=float, default=_UNSET)
    p.add_argument("--slow-wait-s", type=float, default=_UNSET)
    p.add_argument("--maxlag", type=int, default=_UNSET)
    p.add_argument("--resume", action="store_true", help="lift a pause a node reported")
    p.add_argument("--replace", action="store_true", help="PUT: limits not given take the host's defaults")


def _name_or_none(text: str) -> str | None:
    return None if text.lower() in ("none", "null") else text


def _admin_defaults(args) -> argparse.Namespace:
    # SUPPRESS keeps unset options out of the namespace; put them back as "not given".
    for name in ("name", "quota", "content", "enabled", "weight", "credential", "in_flight", "per_s", "per_min",
                 "slow_after_s", "slow_wait_s", "maxlag", "dbname", "parallel", "dumped_at", "category", "depth",
                 "census_interval"):
        if not hasattr(args, name):
            setattr(args, name, _UNSET)
    return args


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="blackwidow", description="Black Widow hub")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the admin API under gunicorn (migrates first)")
    serve.add_argument("--bind", help="HOST:PORT (default: $BW_BIND or 127.0.0.1:8700)")
    serve.add_argument("--workers", type=int, help="worker processes (default: $BW_WORKERS or 3)")
    serve.add_argument("--no-migrate", action="store_true", help="do not apply migrations first")
    migrate = sub.add_parser("migrate", help="apply the database migrations")
    migrate.add_argument("--database-url", help="default: $BW_DATABASE_URL or SQLite under $BW_DATA_DIR")
    scheduler = sub.add_parser("scheduler", help="run the single coordination process")
    scheduler.add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("stats", help="revision statistics: count, avg, mode, plot (blackwidow stats --help)")
    _admin_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["stats"]:        # its own parser: everything after `stats` belongs to it
        return _stats(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "admin":
        return _admin(_admin_defaults(args))
    return {"serve": _serve, "migrate": _migrate, "scheduler": _scheduler}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
