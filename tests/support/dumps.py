"""Dump files for tests and benchmarks: the real Chamorro Wikipedia full-history dump unpacked, and re-split
by page range the way Wikimedia splits large wikis."""
from __future__ import annotations

from pathlib import Path

import py7zr

ROOT = Path(__file__).resolve().parents[2]
CHWIKI_7Z = ROOT.parent / "shared" / "data" / "chwiki-latest-pages-meta-history.xml.7z"
CHWIKI_XML = "chwiki-latest-pages-meta-history.xml"


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
