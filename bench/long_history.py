"""A page with a long generated history on the writable wiki (bench.upstream_budget's backfill), imported
once through the API (action=import, in chunks an upload can carry) and reused by later runs."""
from datetime import datetime, timedelta, timezone
from xml.sax.saxutils import escape

from tests.fixtures.writable_wiki import API_URL, RUN_DIR, AdminApi, WritableWiki

CHUNK = 2000
FIRST = datetime(2001, 1, 1, tzinfo=timezone.utc)


def export_xml(title: str, first: int, count: int) -> bytes:
    """Revisions first … first+count-1 of the page as a schema 0.11 export, a minute apart."""
    revs = []
    for n in range(first, first + count):
        at = (FIRST + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = escape(f"Revision {n} of a generated history. " + "Lorem ipsum dolor sit amet. " * (1 + n % 7))
        revs.append(f"<revision><timestamp>{at}</timestamp><contributor><username>Bench writer</username>"
                    f"</contributor><comment>step {n}</comment><model>wikitext</model><format>text/x-wiki</format>"
                    f'<text xml:space="preserve">{text}</text></revision>')
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">'
            f"<page><title>{escape(title)}</title><ns>0</ns>{''.join(revs)}</page></mediawiki>").encode()


def revision_count(admin: AdminApi, title: str) -> int:
    total, cont = 0, dict[str, str]()
    while True:
        body = admin.call(action="query", prop="revisions", titles=title, rvlimit="max", rvprop="ids", **cont)
        (page,) = body["query"]["pages"]
        total += len(page.get("revisions", []))
        if "continue" not in body:
            return total
        cont = {"rvcontinue": body["continue"]["rvcontinue"]}


def ensure(title: str, revisions: int) -> tuple[AdminApi, int]:
    """(an admin session on the writable wiki, the page's revision count), importing what is missing."""
    admin = WritableWiki(API_URL, RUN_DIR).admin()
    have = revision_count(admin, title)
    while have < revisions:
        admin.import_xml(export_xml(title, have, min(CHUNK, revisions - have)))
        have = revision_count(admin, title)
    return admin, have
