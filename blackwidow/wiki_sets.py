"""The set kinds: one call subscribes a tenant to a whole wiki (`wiki`), some of its namespaces (`namespace`), both
bootstrapped from the dump files they name, or a category's pages (`category`, from dump files or not). Pure: no
I/O, no SQL. Every refusal names its field (`dumps[2]` for the third URL)."""
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Sequence
from urllib.parse import urlsplit

from blackwidow import validation
from blackwidow.wiki_policy import check_dump_url, check_wiki
from shared.errors import ValidationError

DEFAULT_PARALLEL = 2
_DATE = re.compile(r"20\d{6}")


@dataclass(frozen=True)
class NewWikiSet:
    tenant_id: str
    wiki: str                   # canonical api.php URL
    dumps: tuple[str, ...]
    dbname: str | None
    content: bool
    parallel: int
    enabled: bool
    dumped_at: datetime | None      # None: nothing is read from the wiki after the dump
    namespaces: tuple[int, ...] | None = None   # kind namespace: only these; None: every namespace
    category: str | None = None                 # kind category: its title, "Category:..."
    depth: int | None = None                    # kind category: levels of subcategories that count too
    census_interval_s: int | None = None        # kinds wiki, namespace: None: the deployment's; 0: no census


CATEGORY_PREFIX = "Category:"       # the canonical name of namespace 14, which every wiki's API takes


def parse_wiki_set(body, allowlist: tuple[str, ...]) -> NewWikiSet:
    values = validation.parse(body, validation.WIKI_SET_CREATE)
    kind = values["kind"]
    wiki = check_wiki(values["wiki"], allowlist)
    namespaces = _namespaces(kind, values.get("namespaces"))
    category, depth = _category(kind, values.get("category"), values.get("depth"))
    census_interval = values.get("census_interval_s")
    if kind == "category" and census_interval is not None:
        raise ValidationError("'census_interval_s' is for kinds wiki and namespace: a category's pages are "
                              "subscriptions, each proven on its own", field="census_interval_s")
    if kind != "category" and values.get("dumps") is None:
        raise ValidationError(f"'dumps' is required for kind {kind}", field="dumps")
    dumps: list[str] = []
    for index, url in enumerate(values.get("dumps") or ()):
        field = f"dumps[{index}]"
        url = check_dump_url(url, allowlist, field)
        if url in dumps:
            raise ValidationError(f"'{field}' repeats dumps[{dumps.index(url)}]", field=field)
        dumps.append(url)
    return NewWikiSet(tenant_id=values["tenant_id"], wiki=wiki, dumps=tuple(dumps), dbname=values.get("dbname"),
                      content=values.get("content", False), parallel=values.get("parallel", DEFAULT_PARALLEL),
                      enabled=values.get("enabled", True), dumped_at=values.get("dumped_at") or dump_date(dumps),
                      namespaces=namespaces, category=category, depth=depth, census_interval_s=census_interval)


def _category(kind: str, given: str | None, depth: int | None) -> tuple[str | None, int | None]:
    if kind != "category":
        for name, value in (("category", given), ("depth", depth)):
            if value is not None:
                raise ValidationError(f"'{name}' belongs to kind category", field=name)
        return None, None
    if given is None:
        raise ValidationError("'category' is required for kind category", field="category")
    if not given.lower().startswith(CATEGORY_PREFIX.lower()):
        given = CATEGORY_PREFIX + given
    elif not given[len(CATEGORY_PREFIX):].strip():
        raise ValidationError("'category' names no category", field="category")
    return given, depth or 0


def _namespaces(kind: str, given: list[int] | None) -> tuple[int, ...] | None:
    if kind != "namespace":
        if given is not None:
            why = ": a wiki set holds every namespace" if kind == "wiki" else ""
            raise ValidationError(f"'namespaces' belongs to kind namespace{why}", field="namespaces")
        return None
    if given is None:
        raise ValidationError("'namespaces' is required for kind namespace", field="namespaces")
    for index, ns in enumerate(given):
        if ns < 0:
            raise ValidationError(f"'namespaces[{index}]' must be a namespace with pages (0 or more)",
                                  field=f"namespaces[{index}]")
    return tuple(sorted(set(given)))


def dump_date(urls: Sequence[str]) -> datetime | None:
    """The run date in Wikimedia's dump paths (`/chwiki/20260101/chwiki-20260101-...`), the earliest when the files
    name several: every revision from it on is read again from the wiki, so an earlier date only costs requests."""
    dates = []
    for url in urls:
        for part in urlsplit(url).path.split("/"):
            if _DATE.fullmatch(part):
                try:
                    dates.append(datetime.strptime(part, "%Y%m%d").replace(tzinfo=timezone.utc))
                except ValueError:
                    pass
    return min(dates) if dates else None
