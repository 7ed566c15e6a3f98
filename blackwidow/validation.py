"""Admin API input: declarative field specs, strict parsing into plain values. Pure: no I/O.

The same specs generate the request schemas of /openapi.json, so the document cannot drift from
what the API accepts. Every refusal is a ValidationError naming the offending field.
"""
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

from blackwidow.wiki_policy import check_wiki
from shared.errors import BlackWidowError, ValidationError
from shared.hashing import normalize_title, source_uuid
from shared.wire import STATES

MAX_BIGINT = 2**63 - 1
MAX_TITLE_BYTES = 255            # MediaWiki's own limit
MAX_BULK_ITEMS = 1000
MAX_PAGES_TITLES = 10_000        # a `pages` request; a longer list is refused whole (split it)
KINDS = ("page", "pages", "wiki", "namespace", "category")    # what POST /v1/subscriptions creates, by `kind`
SET_KINDS = ("wiki", "namespace", "category")      # of those, the set subscriptions (blackwidow.wiki_sets)
MAX_CATEGORY_DEPTH = 10
MAX_NAMESPACES = 100
MAX_DUMP_FILES = 1000            # enwiki's pages-meta-history comes in about 900 files
MAX_DUMP_PARALLEL = 8
# Characters MediaWiki never allows in a title, plus control characters.
_ILLEGAL_TITLE = re.compile(r"[#<>\[\]|{}\x00-\x1f\x7f\ufffd]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Field:
    name: str
    type: str                     # "string" | "integer" | "boolean" | "array"
    description: str
    required: bool = False
    nullable: bool = False
    min_length: int | None = None
    max_length: int | None = None
    minimum: int | None = None
    maximum: int | None = None
    check: Callable[[Any], Any] | None = None   # further validation / normalization
    items: Sequence["Field"] | str | None = None   # arrays: of objects, or of this JSON type
    enum: Sequence[str] | None = None


_PY_TYPES: dict[str, type[Any]] = {"string": str, "integer": int, "boolean": bool, "array": list}


def _check_type(f: Field, value):
    kind = _PY_TYPES[f.type]
    # bool is an int in Python; JSON true must not pass as a quota.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValidationError(f"'{f.name}' must be {'an' if f.type[0] in 'aeiou' else 'a'} {f.type}",
                              field=f.name)
    if f.type == "string":
        if f.min_length is not None and len(value) < f.min_length:
            raise ValidationError(f"'{f.name}' must not be empty", field=f.name)
        if f.max_length is not None and len(value) > f.max_length:
            raise ValidationError(f"'{f.name}' is longer than {f.max_length} characters", field=f.name)
        if f.enum is not None and value not in f.enum:
            raise ValidationError(f"'{f.name}' must be one of {', '.join(f.enum)}", field=f.name)
    if f.type == "integer":
        if f.minimum is not None and value < f.minimum:
            raise ValidationError(f"'{f.name}' must be >= {f.minimum}", field=f.name)
        if f.maximum is not None and value > f.maximum:
            raise ValidationError(f"'{f.name}' must be <= {f.maximum}", field=f.name)
    if f.type == "array":
        if f.min_length is not None and len(value) < f.min_length:
            raise ValidationError(f"'{f.name}' must not be empty", field=f.name)
        if f.max_length is not None and len(value) > f.max_length:
            raise ValidationError(f"'{f.name}' holds more than {f.max_length} items", field=f.name)
        if isinstance(f.items, str):
            for index, item in enumerate(value):
                _check_type(Field(f"{f.name}[{index}]", f.items, f.description), item)


def parse(body, fields: Sequence[Field]) -> dict:
    """Known fields only; missing optional fields are left out of the result (PATCH semantics)."""
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object", field=None)
    known = {f.name for f in fields}
    for key in body:
        if key not in known:
            raise ValidationError(f"unknown field '{key}'", field=key)
    out = {}
    for f in fields:
        if f.name not in body:
            if f.required:
                raise ValidationError(f"'{f.name}' is required", field=f.name)
            continue
        value = body[f.name]
        if value is None:
            if not f.nullable:
                raise ValidationError(f"'{f.name}' must not be null", field=f.name)
        else:
            _check_type(f, value)
            if f.check is not None:
                value = f.check(value)
        out[f.name] = value
    return out


def schema(fields: Sequence[Field]) -> dict:
    """OpenAPI 3.0 schema of an object made of these fields; unknown fields are refused."""
    props = {}
    for f in fields:
        prop: dict = {"type": f.type, "description": f.description}
        if f.nullable:
            prop["nullable"] = True
        for key, attr in (("minLength", "min_length"), ("maxLength", "max_length"),
                          ("minimum", "minimum"), ("maximum", "maximum")):
            value = getattr(f, attr)
            if value is not None:
                if f.type == "array":
                    key = key.replace("Length", "Items")
                prop[key] = value
        if f.enum is not None:
            prop["enum"] = list(f.enum)
        if isinstance(f.items, str):
            prop["items"] = {"type": f.items}
        elif f.items is not None:
            prop["items"] = schema(f.items)
        props[f.name] = prop
    out = {"type": "object", "additionalProperties": False, "properties": props}
    required = [f.name for f in fields if f.required]
    if required:
        out["required"] = required
    return out


# --- field checks -------------------------------------------------------------------------------

def _plain_text(name: str):
    def check(value: str) -> str:
        if _CONTROL.search(value):
            raise ValidationError(f"'{name}' must not contain control characters", field=name)
        return value
    return check


def check_uuid(value: str, name: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ValidationError(f"'{name}' is not a valid id", field=name) from None


def check_title(value: str, field: str = "title") -> str:
    """The title as typed ('_' as space, trimmed; never re-cased, the wiki decides what it names), then
    MediaWiki's rules: non-empty, at most 255 UTF-8 bytes, no #<>[]|{}."""
    if _ILLEGAL_TITLE.search(value):
        raise ValidationError(f"'{field}' contains a character MediaWiki forbids (#<>[]|{{}} or a control "
                              "character)", field=field)
    title = normalize_title(value)
    if not title:
        raise ValidationError(f"'{field}' must not be empty", field=field)
    if len(title.encode("utf-8")) > MAX_TITLE_BYTES:
        raise ValidationError(f"'{field}' is longer than {MAX_TITLE_BYTES} UTF-8 bytes", field=field)
    return title


def _quota(description: str) -> Field:
    return Field("quota", "integer", description, nullable=True, minimum=0, maximum=MAX_BIGINT)


_TENANT_NAME = Field("name", "string", "Unique tenant name.", min_length=1, max_length=200,
                     check=_plain_text("name"))
_TENANT_QUOTA = _quota("Maximum revisions over all the tenant's subscriptions; null = unlimited.")
_SUB_QUOTA = _quota("Maximum revisions harvested for this subscription; null = unlimited.")
_TENANT_ID = Field("tenant_id", "string", "Owning tenant.", check=lambda v: check_uuid(v, "tenant_id"))
_WIKI = Field("wiki", "string", "The wiki's api.php URL; its host must be allowlisted.", max_length=2048)
_TITLE = Field("title", "string", "Article title as typed ('_' read as a space, surrounding spaces dropped; the "
               "case is kept, and the wiki's own resolution decides which page it names).", check=check_title)
_CONTENT = Field("content", "boolean", "Fetch wikitext (true) or metadata only (false, the default).")
_ENABLED = Field("enabled", "boolean",
                 "false disables the subscription (state disabled); true re-enables it.")


def _required(f: Field) -> Field:
    return Field(**{**f.__dict__, "required": True})


TENANT_CREATE = (_required(_TENANT_NAME), _TENANT_QUOTA)
TENANT_PATCH = (_TENANT_NAME, _TENANT_QUOTA)
SUBSCRIPTION_CREATE = (Field("kind", "string", "One article (the default).", enum=("page",)),
                       _required(_TENANT_ID), _required(_WIKI), _required(_TITLE), _SUB_QUOTA, _CONTENT,
                       _ENABLED)
SUBSCRIPTION_PATCH = (_ENABLED, _SUB_QUOTA, _CONTENT)
BULK_ITEM = (_TENANT_ID, _WIKI, _required(_TITLE), _SUB_QUOTA, _CONTENT, _ENABLED)
BULK_CREATE = (
    Field("tenant_id", _TENANT_ID.type, "Default tenant for items that name none.", check=_TENANT_ID.check),
    Field("wiki", _WIKI.type, "Default wiki for items that name none.", max_length=_WIKI.max_length),
    _quota("Default quota for items that name none."),
    Field("content", "boolean", "Default content flag for items that name none."),
    Field("items", "array", "The articles to subscribe to.", required=True, min_length=1,
          max_length=MAX_BULK_ITEMS, items=BULK_ITEM),
)
PAGES_CASES = ("first-letter", "case-sensitive")    # MediaWiki's siteinfo `case`
PAGES_CREATE = (
    Field("kind", "string", "A list of articles on one wiki for one tenant.", required=True, enum=("pages",)),
    _required(_TENANT_ID), _required(_WIKI),
    Field("titles", "array", "The articles, as typed. Each is checked on its own: a malformed title, a second "
          "spelling of one page or a page the tenant already holds is refused alone, the others are created.",
          required=True, min_length=1, max_length=MAX_PAGES_TITLES, items="string"),
    Field("case", "string", "How the wiki compares titles (its siteinfo `case`): first-letter (the default, "
          "MediaWiki's and Wikipedia's) makes 'apple' and 'Apple' one page; case-sensitive (Wiktionary) two.",
          enum=PAGES_CASES),
    _quota("Quota of each subscription created; null = unlimited."),
    Field("content", "boolean", "Fetch wikitext for every title (default false)."),
    Field("enabled", "boolean", "false creates them disabled."),
)


_DBNAME = re.compile(r"[a-z0-9_]{1,64}")


def _dbname(value: str) -> str:
    if not _DBNAME.fullmatch(value):
        raise ValidationError("'dbname' must be a wiki's database name (lower-case letters, digits and '_', "
                              "e.g. enwiki)", field="dbname")
    return value


def _timestamp(name: str):
    def check(value: str) -> datetime:
        try:
            at = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            at = None
        if at is None or at.tzinfo is None:
            raise ValidationError(f"'{name}' must be an ISO 8601 timestamp with a time zone, e.g. "
                                  "2026-01-01T00:00:00Z", field=name)
        return at.astimezone(timezone.utc)
    return check


MAX_CENSUS_INTERVAL_S = 366 * 86400
_CENSUS_INTERVAL = ("Kinds wiki and namespace: seconds from the end of one census (the proof that the stored "
                    "history equals the wiki's, docs/dumps.md) to the start of the next; 0: no census for this set; "
                    "null or absent: the deployment's BW_CENSUS_INTERVAL_S. A census costs one request per 500 of "
                    "the wiki's revisions.")
WIKI_SET_CREATE = (
    Field("kind", "string", "wiki: a whole wiki; namespace: the pages of some of its namespaces; category: the "
          "pages of a category (and of its subcategories down to `depth`), as its members change. A wiki or "
          "namespace set is bootstrapped from the wiki's XML dump files; a category set may be.", required=True,
          enum=SET_KINDS),
    _required(_TENANT_ID), _required(_WIKI),
    Field("namespaces", "array", "kind namespace only, and required there: the namespace numbers whose pages it "
          "holds (0 articles, 1 talk, 4 project, 14 category, ...).", min_length=1, max_length=MAX_NAMESPACES,
          items="integer"),
    Field("category", "string", "kind category only, and required there: the category's title, with or without "
          "its 'Category:' prefix.", check=lambda v: check_title(v, "category")),
    Field("depth", "integer", "kind category only: how many levels of subcategories count too (default 0: the "
          "category's own pages).", minimum=0, maximum=MAX_CATEGORY_DEPTH),
    Field("dumps", "array", "URLs of the wiki's full-history XML dump files (pages-meta-history or "
          "stub-meta-history; plain, .gz or .bz2), in the order they are to be started. Their hosts follow the "
          "wiki allowlist's rules. Required for kinds wiki and namespace; a category set without dumps reads its "
          "pages' histories through the API.", min_length=1, max_length=MAX_DUMP_FILES, items="string"),
    Field("dbname", "string", "The database name the dumps' <siteinfo> must carry (e.g. enwiki); a file of "
          "another wiki fails. Absent: not checked.", check=_dbname),
    Field("content", "boolean", "Store the wikitext too (default false)."),
    Field("parallel", "integer", "Files read at once over the cluster (default 2: Wikimedia's dump servers allow "
          "a client two connections).", minimum=1, maximum=MAX_DUMP_PARALLEL),
    Field("enabled", "boolean", "false creates it stopped."),
    Field("dumped_at", "string", "When the dump was taken (its run's start, ISO 8601): once every file is written, "
          "every revision from then on is read from the wiki's API, and then what is new. Absent: the date in the "
          "files' URLs (Wikimedia's /<wiki>/<YYYYMMDD>/ directories); with neither, nothing is read after the dump.",
          check=_timestamp("dumped_at")),
    Field("census_interval_s", "integer", _CENSUS_INTERVAL, nullable=True, minimum=0, maximum=MAX_CENSUS_INTERVAL_S),
)
WIKI_SET_PATCH = (Field("enabled", "boolean", "false stops reading its files; true goes on from where each "
                        "stopped."),
                  Field("census_interval_s", "integer", _CENSUS_INTERVAL, nullable=True, minimum=0,
                        maximum=MAX_CENSUS_INTERVAL_S))


def subscription_kind(body) -> str:
    """The `kind` a POST /v1/subscriptions body asks for ("page" when it names none)."""
    kind = body.get("kind", "page") if isinstance(body, dict) else "page"
    if kind not in KINDS:
        raise ValidationError(f"'kind' must be one of {', '.join(KINDS)}", field="kind")
    return kind


def _node_url(value: str) -> str:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or _CONTROL.search(value):
        raise ValidationError("'url' must be an http(s) URL with a host", field="url")
    return value


NODE_REGISTER = (Field("url", "string", "The spawn's advertised base URL (http or https).", required=True,
                       max_length=2048, check=_node_url),)


@dataclass(frozen=True)
class NewSubscription:
    tenant_id: str
    wiki: str               # canonical api.php URL
    title: str              # as typed: '_' as space, trimmed, case kept
    source_uuid: str
    quota: int | None
    content: bool
    enabled: bool


def new_subscription(values: dict, allowlist: tuple[str, ...]) -> NewSubscription:
    """From parsed SUBSCRIPTION_CREATE values (or a bulk item merged with its defaults)."""
    for name in ("tenant_id", "wiki"):
        if values.get(name) is None:
            raise ValidationError(f"'{name}' is required", field=name)
    wiki = check_wiki(values["wiki"], allowlist)
    return NewSubscription(
        tenant_id=values["tenant_id"], wiki=wiki, title=values["title"],
        source_uuid=str(source_uuid(wiki, values["title"])), quota=values.get("quota"),
        content=values.get("content", False), enabled=values.get("enabled", True))


@dataclass(frozen=True)
class ItemError:
    index: int
    error: BlackWidowError          # a ValidationError, or a Conflict with what is already stored

    def to_dict(self) -> dict:
        return {"index": self.index, "code": self.error.code, "message": self.error.message,
                "field": self.error.field}


class ItemsInvalid(ValidationError):
    """A bulk request with one or more bad items; nothing was created. Lists every bad item."""

    def __init__(self, errors: Sequence[ItemError]):
        super().__init__(f"{len(errors)} item(s) refused; nothing was created", field="items")
        self.errors = tuple(errors)

    def to_dict(self) -> dict:
        body = super().to_dict()
        body["error"]["items"] = [e.to_dict() for e in self.errors]
        return body


def parse_subscription(body, allowlist: tuple[str, ...]) -> NewSubscription:
    return new_subscription(parse(body, SUBSCRIPTION_CREATE), allowlist)


def parse_bulk(body, allowlist: tuple[str, ...]) -> list[NewSubscription]:
    """All items or none: raises ItemsInvalid naming each bad item's index and field."""
    defaults = parse(body, BULK_CREATE)
    items = defaults.pop("items")
    out, errors = [], []
    for index, item in enumerate(items):
        try:
            values = parse(item, BULK_ITEM)
            out.append(new_subscription({**defaults, **values}, allowlist))
        except ValidationError as exc:
            errors.append(ItemError(index, exc))
    if errors:
        raise ItemsInvalid(errors)
    return out


# --- query strings --------------------------------------------------------------------------------

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def parse_query(params: dict, allowed: Sequence[str]) -> dict:
    """Single-valued, known query parameters only."""
    for key, value in params.items():
        if key not in allowed:
            raise ValidationError(f"unknown query parameter '{key}'", field=key)
        if not isinstance(value, str):
            raise ValidationError(f"'{key}' must be given once", field=key)
    return dict(params)


def parse_limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise ValidationError(f"'limit' must be an integer from 1 to {MAX_LIMIT}", field="limit")
    return int(text)


def parse_state(text: str | None) -> str | None:
    if text is not None and text not in STATES:
        raise ValidationError(f"'state' must be one of {', '.join(STATES)}", field="state")
    return text
