"""Dump files for tests and benchmarks: the real Chamorro Wikipedia full-history dump unpacked, and re-split
by page range the way Wikimedia splits large wikis."""
from __future__ import annotations

import gzip
import hashlib
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import py7zr

ROOT = Path(__file__).resolve().parents[2]
CHWIKI_7Z = ROOT.parent / "shared" / "data" / "chwiki-latest-pages-meta-history.xml.7z"
CHWIKI_XML = "chwiki-latest-pages-meta-history.xml"
X = "{http://www.mediawiki.org/xml/export-0.10/}"


def unpack_chwiki(directory: Path) -> Path:
    """The dump as plain XML in `directory` (97 MB)."""
    with py7zr.SevenZipFile(CHWIKI_7Z) as archive:
        archive.extractall(directory)
    return directory / CHWIKI_XML


def split_pages(text: str, parts: int) -> list[str]:
    """The dump re-split into `parts` complete files of about as many pages each (every file with the header and
    the footer). Text surgery on the <page> lines the dump writer emits; reading stays mwxml's."""
    start = text.index("\n  <page>\n") + 1
    end = text.rindex("</mediawiki>")
    header, body = text[:start], text[start:end]
    starts, at = [], body.find("  <page>\n")
    while at >= 0:
        starts.append(at)
        at = body.find("  <page>\n", at + 1)
    cuts = [starts[len(starts) * i // parts] for i in range(parts)] + [len(body)]
    return [header + body[a:b] + "</mediawiki>\n" for a, b in zip(cuts, cuts[1:])]


def truth(path: Path) -> dict[int, dict[str, Any]]:
    """rev_id -> the fields the store must hold, read with ElementTree independently of the code under test."""
    out: dict[int, dict[str, Any]] = {}
    for _, el in ET.iterparse(path):
        if el.tag != X + "page":
            continue
        page = (int(el.findtext(X + "id")), int(el.findtext(X + "ns")), el.findtext(X + "title"))
        for rev in el.iter(X + "revision"):
            who, text_el, comment = rev.find(X + "contributor"), rev.find(X + "text"), rev.find(X + "comment")
            user_hidden = who.get("deleted") is not None
            ip = who.findtext(X + "ip")
            text_hidden = text_el.get("deleted") is not None
            text = None if text_hidden else (text_el.text or "")
            out[int(rev.findtext(X + "id"))] = {
                "page_id": page[0], "ns": page[1], "title": page[2],
                "parent_id": int(rev.findtext(X + "parentid") or 0),
                "timestamp": datetime.strptime(rev.findtext(X + "timestamp"), "%Y-%m-%dT%H:%M:%SZ")
                .replace(tzinfo=timezone.utc),
                "user": None if user_hidden else (ip or who.findtext(X + "username") or ""),
                "user_id": None if user_hidden else (0 if ip else int(who.findtext(X + "id"))),
                "anon": not user_hidden and (ip is not None or who.findtext(X + "id") == "0"),
                "minor": rev.find(X + "minor") is not None,
                "size": max(int(text_el.get("bytes")), 0) if text_el.get("bytes") else len((text or "").encode()),
                "sha1": None if text is None else hashlib.sha1(text.encode()).hexdigest(),
                "comment": None if comment is not None and comment.get("deleted") else
                (comment.text or "" if comment is not None else ""),
                "content_model": rev.findtext(X + "model"), "tags": (),
                "user_hidden": user_hidden, "text_hidden": text_hidden, "sha1_hidden": text_hidden,
                "comment_hidden": comment is not None and comment.get("deleted") is not None,
                "content": text,
            }
        el.clear()
    return out


def assert_stored(store, wiki: str, expected: dict[int, dict[str, Any]], *, content: bool) -> None:
    """The store holds exactly the `expected` revisions of `wiki` (truth()), field by field."""
    stored = {r.rev_id: r for r in store.revisions(wiki)}
    assert sorted(stored) == sorted(expected)
    for rev_id, want in expected.items():
        got = stored[rev_id]
        fields = {k: getattr(got, k) for k in want if k != "content"}
        assert fields == {k: v for k, v in want.items() if k != "content"}, rev_id
        if content:
            assert store.content(wiki, rev_id) == want["content"], rev_id


def serve_split(text: str, parts: int, folder: Path, base_url: str) -> tuple[list[str], list[set[int]]]:
    """`text` re-split into `parts` gzip files in `folder` (served at `base_url` + the folder's name): their URLs,
    and each file's revision ids."""
    folder.mkdir(parents=True)
    urls, ids = [], []
    for i, part in enumerate(split_pages(text, parts), 1):
        name = f"pages-meta-history{i}.xml.gz"
        (folder / name).write_bytes(gzip.compress(part.encode("utf-8"), compresslevel=6))
        urls.append(f"{base_url}{folder.name}/{name}")
        ids.append({int(n) for n in re.findall(r"<revision>\s*<id>(\d+)</id>", part)})
    return urls, ids


def api_truth(wiki, namespace: int | None = None) -> dict[int, dict[str, Any]]:
    """Every revision a wiki's API lists (all namespaces, or one), with the fields the dump and the API paths store
    alike; `wiki` has `session()` and `api_url` (tests.fixtures.writable_wiki). Titles are each page's current one."""
    http = wiki.session()
    out: dict[int, dict] = {}
    params = {"action": "query", "list": "allrevisions", "arvlimit": "max", "format": "json", "formatversion": "2",
              "arvprop": "ids|timestamp|flags|user|userid|size|sha1|comment"}
    if namespace is not None:
        params["arvnamespace"] = str(namespace)
    cont: dict = {}
    while True:
        body = http.get(wiki.api_url, params={**params, **cont}, timeout=30).json()
        for page in body["query"]["allrevisions"]:
            for r in page["revisions"]:
                out[r["revid"]] = {"page_id": page["pageid"], "ns": page["ns"], "title": page["title"],
                                   "parent_id": r["parentid"], "size": r["size"], "minor": r["minor"],
                                   "timestamp": datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")),
                                   "user": None if r.get("userhidden") else r["user"],
                                   "comment": None if r.get("commenthidden") else r["comment"],
                                   "sha1": None if r.get("sha1hidden") else r["sha1"]}
        if "continue" not in body:
            return out
        cont = body["continue"]


def stored_fields(store, wiki: str) -> dict[int, dict[str, Any]]:
    """What the store holds of `wiki`, as api_truth() lists it (titles as harvested)."""
    return {r.rev_id: {"page_id": r.page_id, "ns": r.ns, "title": r.title, "parent_id": r.parent_id, "size": r.size,
                       "minor": r.minor, "timestamp": r.timestamp, "user": r.user, "comment": r.comment,
                       "sha1": r.sha1}
            for r in store.revisions(wiki)}
