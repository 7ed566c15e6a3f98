"""Gives a freshly imported wiki the change tags of the generator's expected histories, through its API as
an administrator (an XML import carries no tags), then checks that the wiki serves exactly those tags.
Stdlib only, like tools.wikigen: scripts/services/mediawiki.sh runs it with the system python3.

    BW_MW_ADMIN_PASSWORD=... python -m tools.wikitags --api URL --expected expected.json.gz [--user Admin]

Revisions are matched by (title, timestamp), unique within the generated wiki: the importer assigns its
own revision ids. Only missing tags are added, so a second run changes nothing.
"""
from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import sys
import time
import urllib.parse
import urllib.request
from collections import defaultdict

from tools.wikigen import Wiki, load_expected

USER_AGENT = "BlackWidow-services/0.1 (local wiki seeding)"
REASON = "change tags of the generated history"
BATCH = 50                      # revids per action=tag request: the limit without apihighlimits
TIMEOUT_S = 120
DEFINE_WAIT_S = 10

Key = tuple[str, str]           # (title, timestamp)
Tags = tuple[str, ...]          # sorted
Served = dict[Key, tuple[Tags, int]]    # -> (tags, revision id)


class WikiApi:
    """A logged-in session (cookies) on one api.php; any API error raises RuntimeError."""

    def __init__(self, url: str):
        self.url = url
        cookies = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        self._opener = urllib.request.build_opener(cookies)

    def call(self, method: str = "GET", **params) -> dict:
        query = urllib.parse.urlencode({"format": "json", "formatversion": "2", **params})
        if method == "GET":
            req = urllib.request.Request(f"{self.url}?{query}", headers={"User-Agent": USER_AGENT})
        else:
            req = urllib.request.Request(self.url, data=query.encode(), headers={"User-Agent": USER_AGENT})
        with self._opener.open(req, timeout=TIMEOUT_S) as resp:
            body = json.load(resp)
        if "error" in body:
            raise RuntimeError(f"{params.get('action')}: {body['error']}")
        return body

    def login(self, user: str, password: str) -> None:
        token = self.call(action="query", meta="tokens", type="login")["query"]["tokens"]["logintoken"]
        result = self.call("POST", action="clientlogin", username=user, password=password, logintoken=token,
                           loginreturnurl="http://127.0.0.1/")["clientlogin"]
        if result["status"] != "PASS":
            raise RuntimeError(f"login as {user}: {result}")


def wanted_tags(wiki: Wiki) -> dict[Key, Tags]:
    return {(page.title, rev.timestamp): rev.tags for page in wiki.pages for rev in page.revisions}


def served_tags(api: WikiApi) -> Served:
    """Every revision the wiki serves."""
    out, cont = {}, {}
    while True:
        body = api.call(action="query", list="allrevisions", arvprop="ids|timestamp|tags", arvlimit="max",
                        **cont)
        for page in body["query"]["allrevisions"]:
            for rev in page["revisions"]:
                out[(page["title"], rev["timestamp"])] = (tuple(sorted(rev["tags"])), rev["revid"])
        if "continue" not in body:
            return out
        cont = body["continue"]


def differences(wanted: dict[Key, Tags], served: Served) -> list[str]:
    out = []
    for (title, ts), tags in wanted.items():
        got = served[(title, ts)][0] if (title, ts) in served else None
        if got != tags:
            out.append(f"{title} @ {ts}: generated {tags}, served {got}")
    return out


def defined_tags(api: WikiApi) -> set[str]:
    tags = api.call(action="query", list="tags", tglimit="max", tgprop="defined")["query"]["tags"]
    return {t["name"] for t in tags if t.get("defined")}


def define_tag(api: WikiApi, tag: str, csrf: str) -> None:
    """Create the tag unless it exists; returns once the wiki accepts it: its cached list of defined tags
    can lag a create by a moment, and action=tag rejects a tag that list does not hold yet."""
    if tag in defined_tags(api):
        return
    api.call("POST", action="managetags", operation="create", tag=tag, reason=REASON, token=csrf)
    deadline = time.monotonic() + DEFINE_WAIT_S
    while tag not in defined_tags(api):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the tag {tag} is still not defined {DEFINE_WAIT_S} s after its creation")
        time.sleep(0.1)


def apply_tags(api: WikiApi, wanted: dict[Key, Tags]) -> dict[str, int]:
    """Define every wanted tag and add each where missing; returns tag -> revisions newly tagged."""
    served = served_tags(api)
    missing = [k for k in wanted if k not in served]
    if missing:
        raise RuntimeError(f"{len(missing)} generated revisions are not in the wiki, e.g. {missing[0]}")
    todo: dict[str, list[int]] = defaultdict(list)
    for key, tags in wanted.items():
        have, revid = served[key]
        for tag in set(tags) - set(have):
            todo[tag].append(revid)
    if not todo:
        return {}
    csrf = api.call(action="query", meta="tokens")["query"]["tokens"]["csrftoken"]
    for tag, revids in todo.items():
        define_tag(api, tag, csrf)
        for i in range(0, len(revids), BATCH):
            body = api.call("POST", action="tag", revid="|".join(map(str, revids[i:i + BATCH])), add=tag,
                            reason=REASON, token=csrf)
            failed = [r for r in body["tag"] if r.get("status") != "success"]
            if failed:
                raise RuntimeError(f"action=tag {tag}: {failed[:3]}")
    return {tag: len(revids) for tag, revids in todo.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.wikitags", description=__doc__.splitlines()[0])
    parser.add_argument("--api", required=True, help="the wiki's api.php URL")
    parser.add_argument("--expected", required=True, help="expected.json.gz written by tools.wikigen")
    parser.add_argument("--user", default="Admin", help="an administrator (password: $BW_MW_ADMIN_PASSWORD)")
    args = parser.parse_args(argv)
    password = os.environ.get("BW_MW_ADMIN_PASSWORD")
    if not password:
        parser.error("BW_MW_ADMIN_PASSWORD is not set")
    wanted = wanted_tags(load_expected(args.expected))
    api = WikiApi(args.api)
    try:
        api.login(args.user, password)
        added = apply_tags(api, wanted)
        wrong = differences(wanted, served_tags(api))
    except (OSError, RuntimeError, KeyError, ValueError) as exc:
        print(f"wikitags: {exc}", file=sys.stderr)
        return 1
    if wrong:
        print(f"wikitags: {len(wrong)} revisions with other tags than generated, e.g. {wrong[0]}",
              file=sys.stderr)
        return 1
    summary = ", ".join(f"{tag} on {n}" for tag, n in sorted(added.items())) or "nothing new"
    print(f"wikitags: tagged {summary}; all {len(wanted)} revisions carry their generated tags")
    return 0


if __name__ == "__main__":
    sys.exit(main())
