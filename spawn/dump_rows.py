"""Decisions for dump ingest, pure: which dumps are acceptable and how a dump revision becomes the row the API
path writes (spawn.mediawiki._revision). No I/O; the shell is spawn.dump_ingest."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from shared.revisions.model import Revision

# Export schema versions whose <revision> layout mwxml reads and these rules were checked against.
KNOWN_SCHEMAS = ("0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "0.10", "0.11")


class DumpError(Exception):
    """A dump could not be ingested; what was written before stays written and checkpointed."""


class DumpNotFound(DumpError):
    """The URL answered an HTTP error (404, 403, ...) or the local file is missing."""


class DumpStalled(DumpError):
    """The connection stalled or dropped: no byte arrived within the read timeout."""


class DumpCorrupt(DumpError):
    """A truncated or corrupt compressed stream, or XML that does not parse."""


class DumpSchemaUnknown(DumpError):
    """The <mediawiki> root names an export schema version outside KNOWN_SCHEMAS."""


class DumpWrongWiki(DumpError):
    """The dump's <siteinfo> names another wiki than the one expected."""


@dataclass(frozen=True)
class ExpectedSite:
    """What the dump's <siteinfo> must say; a None field is not checked."""
    dbname: str | None = None
    host: str | None = None     # host of <base>, e.g. "ch.wikipedia.org"


def check_schema(version: str | None) -> None:
    if version not in KNOWN_SCHEMAS:
        raise DumpSchemaUnknown(f"unknown export schema version {version!r}; known: {', '.join(KNOWN_SCHEMAS)}")


def check_site(dbname: str | None, base: str | None, expected: ExpectedSite) -> None:
    if expected.dbname is not None and dbname != expected.dbname:
        raise DumpWrongWiki(f"dump of dbname {dbname!r}, expected {expected.dbname!r}")
    host = urlsplit(base).hostname if base else None
    if expected.host is not None and host != expected.host.lower():
        raise DumpWrongWiki(f"dump of site {base!r}, expected host {expected.host!r}")


def sha1_hex(base36: str | None) -> str | None:
    """Dumps give sha1 in base 36 (31 characters); the API and the store use base 16 (40)."""
    if not base36:
        return None
    return format(int(base36, 36), "040x")


def dump_size(declared: int | str | None, text: str | None, text_hidden: bool) -> int:
    """Bytes of the text, as the API's size: the declared bytes="" when given (-1 for deleted text: 0),
    else the UTF-8 length of the text the dump carries (older dumps omit the attribute)."""
    if declared is not None:
        return max(int(declared), 0)
    if text is None or text_hidden:
        return 0
    return len(text.encode("utf-8"))


def user_name(user_id: int | None, text: str | None) -> str:
    """mwxml reads an empty <username /> (id 0 in very old imports) as the string "None"; a registered user
    called None has a non-zero id, and an IP is never None."""
    if text is None or (user_id == 0 and text == "None"):
        return ""
    return text


def to_row(wiki: str, page: Any, rev: Any, content: bool) -> Revision:
    """One mwxml revision as the API path's row. Dumps carry no tags (the row has none) and no size for
    deleted text (stored as 0)."""
    deleted = rev.deleted
    main = rev.slots.contents.get("main") if rev.slots is not None else None
    text_hidden = bool(deleted.text)
    user_hidden = bool(deleted.user)
    comment_hidden = bool(deleted.comment)
    sha1 = None if text_hidden else sha1_hex(rev.slots.sha1 if rev.slots is not None else None)
    size = dump_size(main.bytes if main is not None else None, None if main is None else main.text, text_hidden)
    user = None if user_hidden or rev.user is None else rev.user
    anon = user is not None and not user.id     # an IP (no <id>), or id 0 as very old imports have it
    return Revision(
        wiki=wiki, page_id=int(page.id), ns=int(page.namespace), title=str(page.title),
        rev_id=int(rev.id), parent_id=int(rev.parent_id or 0),
        timestamp=datetime.fromtimestamp(rev.timestamp.unix(), timezone.utc),
        user=None if user is None else user_name(user.id, user.text),
        user_id=None if user is None else (0 if anon else int(user.id)),
        anon=anon, minor=bool(rev.minor), size=size,
        sha1=sha1, comment=None if comment_hidden else (rev.comment or ""),
        content_model=main.model if main is not None else None,
        content=(main.text or "") if content and main is not None and not text_hidden else None,
        user_hidden=user_hidden, comment_hidden=comment_hidden, sha1_hidden=text_hidden,
        text_hidden=text_hidden,
    )
