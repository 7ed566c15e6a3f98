"""The `pages` kind: one call subscribes a tenant to a list of titles on one wiki. Pure: no I/O, no SQL.

A body of the wrong shape (too many titles, a title that is not a string) is refused whole, naming the
field. Past that, every title stands alone: a malformed one, a second spelling of a page earlier in the
list, or a page the tenant already holds is refused with its reason, and the others are created.
"""
from dataclasses import dataclass
from typing import Mapping

from blackwidow import validation
from blackwidow.wiki_policy import check_wiki
from shared.errors import ValidationError
from shared.hashing import source_uuid

MALFORMED, DUPLICATE, HELD = "malformed_title", "duplicate", "already_subscribed"
FIRST_LETTER, CASE_SENSITIVE = validation.PAGES_CASES


@dataclass(frozen=True)
class PagesRequest:
    tenant_id: str
    wiki: str                   # canonical api.php URL
    titles: tuple[str, ...]     # as sent, each a string
    case: str                   # one of validation.PAGES_CASES
    quota: int | None
    content: bool
    enabled: bool


@dataclass(frozen=True)
class Refusal:
    index: int
    title: str                  # as sent
    reason: str                 # MALFORMED | DUPLICATE | HELD
    message: str
    duplicate_of: int | None = None         # DUPLICATE: the earlier item it repeats
    subscription_id: str | None = None      # HELD: the tenant's subscription to that page
    field: str = "title"


@dataclass(frozen=True)
class Plan:
    creates: tuple[tuple[int, validation.NewSubscription], ...]     # (index in the request, what to create)
    refusals: tuple[Refusal, ...]


def parse_pages(body, allowlist: tuple[str, ...]) -> PagesRequest:
    """Raises ValidationError naming the field for what refuses the whole request."""
    values = validation.parse(body, validation.PAGES_CREATE)
    return PagesRequest(
        tenant_id=values["tenant_id"], wiki=check_wiki(values["wiki"], allowlist), titles=tuple(values["titles"]),
        case=values.get("case", FIRST_LETTER), quota=values.get("quota"),
        content=values.get("content", False), enabled=values.get("enabled", True))


def title_key(title: str, case: str) -> str:
    """One value for every spelling the wiki reads as one page (title already normalised: '_' as space)."""
    if case == CASE_SENSITIVE or not title:
        return title
    first = title[0].upper()
    # a letter whose capital is two ('ß' -> 'SS') is one MediaWiki leaves as it is
    return (first if len(first) == 1 else title[0]) + title[1:]


def _spellings(title: str, case: str) -> set[str]:
    if case == CASE_SENSITIVE:
        return {title}
    lower = title[0].lower()
    return {title, title_key(title, case)} | ({lower + title[1:]} if len(lower) == 1 else set())


def _checked(titles: tuple[str, ...]) -> list[str | ValidationError]:
    out: list[str | ValidationError] = []
    for raw in titles:
        try:
            out.append(validation.check_title(raw))
        except ValidationError as exc:
            out.append(exc)
    return out


def held_sources(request: PagesRequest) -> set[str]:
    """source_uuids under which the tenant may already hold one of the titles, in any spelling the wiki
    reads alike: what the store looks up before plan()."""
    return {str(source_uuid(request.wiki, spelling))
            for title in _checked(request.titles) if isinstance(title, str)
            for spelling in _spellings(title, request.case)}


def plan(request: PagesRequest, held: Mapping[str, str]) -> Plan:
    """What to create and what to refuse, item by item. `held`: the tenant's subscriptions on this wiki
    among held_sources(), title -> subscription id."""
    held_keys = {title_key(title, request.case): (title, sub_id) for title, sub_id in held.items()}
    first: dict[str, int] = {}
    creates, refusals = [], []
    for index, (raw, title) in enumerate(zip(request.titles, _checked(request.titles))):
        if isinstance(title, ValidationError):
            refusals.append(Refusal(index, raw, MALFORMED, title.message))
            continue
        key = title_key(title, request.case)
        if key in held_keys:
            stored, sub_id = held_keys[key]
            refusals.append(Refusal(index, raw, HELD, f"the tenant already subscribes to {stored!r}",
                                    subscription_id=sub_id))
        elif key in first:
            refusals.append(Refusal(index, raw, DUPLICATE, f"{title!r} names the same page as item {first[key]}",
                                    duplicate_of=first[key]))
        else:
            first[key] = index
            creates.append((index, validation.NewSubscription(
                tenant_id=request.tenant_id, wiki=request.wiki, title=title,
                source_uuid=str(source_uuid(request.wiki, title)), quota=request.quota,
                content=request.content, enabled=request.enabled)))
    return Plan(tuple(creates), tuple(refusals))


def result(request: PagesRequest, decided: Plan, created_ids: list[str]) -> dict:
    """The answer: counts, then the created items and the refused ones, each by its index in the request."""
    created = [{"index": index, "title": request.titles[index], "id": sub_id}
               for (index, _), sub_id in zip(decided.creates, created_ids)]
    refused = [{"index": r.index, "title": r.title, "field": r.field, "reason": r.reason, "message": r.message,
                "duplicate_of": r.duplicate_of, "subscription_id": r.subscription_id}
               for r in decided.refusals]
    return {"kind": "pages", "tenant_id": request.tenant_id, "wiki": request.wiki, "case": request.case,
            "requested": len(request.titles), "created": created, "refused": refused}
