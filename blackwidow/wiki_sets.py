"""The `wiki` kind: one call subscribes a tenant to a whole wiki, bootstrapped from the dump files it names.
Pure: no I/O, no SQL. Every refusal names its field (`dumps[2]` for the third URL)."""
from dataclasses import dataclass

from blackwidow import validation
from blackwidow.wiki_policy import check_dump_url, check_wiki
from shared.errors import ValidationError

DEFAULT_PARALLEL = 2


@dataclass(frozen=True)
class NewWikiSet:
    tenant_id: str
    wiki: str                   # canonical api.php URL
    dumps: tuple[str, ...]
    dbname: str | None
    content: bool
    parallel: int
    enabled: bool


def parse_wiki_set(body, allowlist: tuple[str, ...]) -> NewWikiSet:
    values = validation.parse(body, validation.WIKI_SET_CREATE)
    wiki = check_wiki(values["wiki"], allowlist)
    dumps: list[str] = []
    for index, url in enumerate(values["dumps"]):
        field = f"dumps[{index}]"
        url = check_dump_url(url, allowlist, field)
        if url in dumps:
            raise ValidationError(f"'{field}' repeats dumps[{dumps.index(url)}]", field=field)
        dumps.append(url)
    return NewWikiSet(tenant_id=values["tenant_id"], wiki=wiki, dumps=tuple(dumps), dbname=values.get("dbname"),
                      content=values.get("content", False), parallel=values.get("parallel", DEFAULT_PARALLEL),
                      enabled=values.get("enabled", True))
