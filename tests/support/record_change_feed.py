"""Records what the writable wiki's change feed says about each kind of change, for the table tests of
spawn.feed_events:

    .venv/bin/python -m tests.support.record_change_feed > tests/unit/spawn/recentchanges_writable_wiki.json


As its administrator it edits, creates, moves (with and without a redirect), deletes and undeletes, hides and
shows a revision's content and comment, imports an XML file with old timestamps, merges one page's history into
another and protects a page, all on pages with fresh titles; then reads `list=recentchanges` anonymously, with the
parameters spawn.change_feed uses, and keeps the items of those pages under a name each. Suppression never
reaches recentchanges, so a suppressor account ("Feed suppressor", made here once) suppresses a revision's user
and the suppression log's entry is read with `list=logevents`. Needs the writable wiki
(scripts/services/mediawiki-writable.sh); it changes that wiki like the integration tests do.
"""
import json
import sys
from datetime import datetime, timezone

import requests

from spawn.change_feed import RCPROP, RCTYPE
from tests.fixtures.writable_wiki import API_URL, RUN_DIR, AdminApi, WikiApiError, WritableWiki, api_call

SUPPRESSOR = ("Feed suppressor", "SuppressorPass-12345")


def import_xml(title: str) -> bytes:
    """An export of one page with two revisions from 2004, one by an account and one by an IP."""
    revisions = "".join(
        f"<revision><timestamp>{ts}</timestamp><contributor>{who}</contributor><comment>{comment}</comment>"
        f"<model>wikitext</model><format>text/x-wiki</format><text xml:space=\"preserve\">{text}</text></revision>"
        for ts, who, comment, text in (
            ("2004-01-20T16:40:10Z", "<username>Old user</username>", "old one", "imported text"),
            ("2004-01-21T16:40:10Z", "<ip>10.0.0.7</ip>", "old two", "imported text, edited")))
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">'
            f"<page><title>{title}</title><ns>0</ns>{revisions}</page></mediawiki>").encode()


def suppressor(wiki: WritableWiki, admin: AdminApi) -> AdminApi:
    name, password = SUPPRESSOR
    token = admin.call(action="query", meta="tokens", type="createaccount")["query"]["tokens"]["createaccounttoken"]
    try:
        admin.call("POST", action="createaccount", username=name, password=password, retype=password,
                   createtoken=token, createreturnurl="http://127.0.0.1/")
    except WikiApiError as exc:
        if exc.code != "userexists":
            raise
    token = admin.call(action="query", meta="tokens", type="userrights")["query"]["tokens"]["userrightstoken"]
    admin.call("POST", action="userrights", user=name, add="suppress|sysop", token=token)
    return AdminApi(wiki.session(), wiki.api_url, name, password).login()


def record() -> dict:
    wiki = WritableWiki(API_URL, RUN_DIR)
    admin = wiki.admin()
    anonymous = wiki.session()
    feed = {"action": "query", "list": "recentchanges", "rcprop": RCPROP, "rctype": RCTYPE}
    (head,) = api_call(anonymous, API_URL, **feed, rcdir="older", rclimit=1)["query"]["recentchanges"]
    t = wiki.unique_title("Feed record")
    admin.edit(f"{t} edited", "first text", "create")
    admin.edit(f"{t} edited", "second text", "edit")
    admin.edit(f"{t} moved", "text", "create")
    admin.move(f"{t} moved", f"{t} moved away", "move with a redirect")
    admin.edit(f"{t} moved quietly", "text", "create")
    admin.move(f"{t} moved quietly", f"{t} moved quietly away", "move without a redirect", leave_redirect=False)
    admin.edit(f"{t} deleted", "text", "create")
    admin.delete(f"{t} deleted")
    admin.undelete(f"{t} deleted")
    hidden = admin.edit(f"{t} hidden", "text", "create")     # the current revision's content cannot be hidden
    admin.edit(f"{t} hidden", "second text", "edit")
    admin.revisiondelete([hidden], hide=("content", "comment"))
    admin.revisiondelete([hidden], hide=(), show=("content", "comment"))
    admin.import_xml(import_xml(f"{t} imported"))
    admin.edit(f"{t} merge source", "text", "create")
    admin.edit(f"{t} merge destination", "text", "create")
    admin.call("POST", action="mergehistory", token=admin.csrf_token(), reason="merge",
               **{"from": f"{t} merge source", "to": f"{t} merge destination"})
    admin.call("POST", action="protect", title=f"{t} edited", protections="edit=sysop", reason="protect",
               token=admin.csrf_token())
    secret = suppressor(wiki, admin)
    suppressed = secret.edit(f"{t} suppressed", "text", "create")
    secret.call("POST", action="revisiondelete", type="revision", ids=str(suppressed), hide="user", suppress="yes",
                reason="suppress", token=secret.csrf_token())

    body = api_call(anonymous, API_URL, **feed, rcdir="newer", rclimit="max",
                    rccontinue=f"{head['timestamp']}|{head['rcid']}")
    items = [i for i in body["query"]["recentchanges"] if i["title"].startswith(t)]
    names = ["create", "edit", "create moved", "move with redirect", "create moved quietly",
             "move without redirect", "delete", "restore", "create hidden", "edit hidden",
             "hide content and comment",
             "show content and comment", "import upload", "create merge source", "create merge destination",
             "merge", "protect", "create suppressed"]
    if len(items) != len(names):
        raise SystemExit(f"expected {len(names)} items, the feed has {len(items)}: {json.dumps(items)}")
    # entries that change no page's history: the seed's tag definition, the suppressor's account and rights
    everything = api_call(anonymous, API_URL, **feed, rcdir="newer", rclimit="max")["query"]["recentchanges"]
    unrelated = {f"{i['logtype']}/{i['logaction']}": i for i in reversed(everything)
                 if i.get("logtype") in ("managetags", "newusers", "rights")}
    logevents = api_call(secret.http, API_URL, action="query", list="logevents", letype="suppress", lelimit=1,
                         leprop="ids|title|type|timestamp|details")["query"]["logevents"]
    return {
        "about": ("Recorded by tests/support/record_change_feed.py from the writable MediaWiki "
                  f"({wiki_version(anonymous)}, SQLite, php -S) on {datetime.now(timezone.utc):%Y-%m-%d}: "
                  f"list=recentchanges read anonymously (rcprop={RCPROP}, rctype={RCTYPE}, formatversion=2), "
                  "the items of one run's pages, named for the action that made each (the deleted page's creation is "
                  "missing: a deletion removes a page's edit entries); the suppression log's entry of that run "
                  "(list=logevents as a suppressor: recentchanges never shows it); and the oldest entries of "
                  "kinds that change no history."),
        "recentchanges": dict(zip(names, items)),
        "logevents": {"suppress user": logevents[0]},
        "unrelated": unrelated,
    }


def wiki_version(http: requests.Session) -> str:
    return str(api_call(http, API_URL, action="query", meta="siteinfo")["query"]["general"]["generator"])


if __name__ == "__main__":
    json.dump(record(), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
