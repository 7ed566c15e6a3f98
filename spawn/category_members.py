"""Category sets' membership (docs/sets.md, "Category sets"): one thread per set whose MembersDuty the hub gives
this node, listing the category's members with `list=categorymembers` (500 a request), and its subcategories'
down to the duty's depth, through the spawn's client for that wiki (its session, maxlag, and the identity's budget
in the backfill lane); again every `interval_s`, so members added and removed reach the hub. The hub turns the
listing into the set's page subscriptions; this node only reads it and reports it, one part per poll.

Members are the category's pages and files; subcategories are followed, not subscribed. A subcategory met twice
(categories may loop) is read once.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Mapping, Sequence

from shared.dump_wire import wire_time
from shared.members_wire import Member, MembersDuty, MembersReport, digest, part, parts
from spawn.budget_rules import BACKFILL
from spawn.mediawiki import BadResponse, Cancelled, MediaWikiClient, MediaWikiError, listed
from spawn.upstream_budget import Demand

logger = logging.getLogger(__name__)

JOIN_S = 2.0
CATEGORY_NS = 14

ClientFor = Callable[[str, "str | None"], MediaWikiClient]


@dataclass(frozen=True)
class Answer:
    members: list[Member]       # pages and files
    subcategories: list[str]    # titles, "Category:..."
    more: dict | None           # the continuation


def parse_answer(body: dict) -> Answer:
    """One answer of categorymembers. A malformed answer raises BadResponse and is fetched again."""
    items, more = listed(body, "categorymembers")
    members, subcategories = [], []
    for item in items:
        if not isinstance(item, dict):
            raise BadResponse("a category member that is not an object")
        page_id, ns, title = item.get("pageid"), item.get("ns"), item.get("title")
        if type(page_id) is not int or type(ns) is not int or not isinstance(title, str):     # a bool is no id
            raise BadResponse("a category member without pageid, ns and title")
        if ns == CATEGORY_NS:
            subcategories.append(title)
        else:
            members.append(Member(page_id, ns, title))
    return Answer(members, subcategories, more)


def listing(read: Callable[[str], list[Answer]], category: str, depth: int) -> tuple[list[Member], int]:
    """The members of `category` and of its subcategories `depth` levels down, each page once, and the requests
    it took. `read(title)`: every answer of one category's listing."""
    seen_categories = {category}
    level, members, requests = [category], {}, 0
    for remaining in range(depth, -1, -1):
        below: list[str] = []
        for title in level:
            for answer in read(title):
                requests += 1
                for m in answer.members:
                    members[m.page_id] = m
                if remaining > 0:
                    for sub in answer.subcategories:
                        if sub not in seen_categories:
                            seen_categories.add(sub)
                            below.append(sub)
        level = below
    return sorted(members.values()), requests


class MembersReader:
    """One set's listing. Thread-safe: the poll thread reads report() and gives it newer duties while its own
    thread reads the wiki."""

    def __init__(self, duty: MembersDuty, client: MediaWikiClient):
        self.duty, self.client = duty, client
        self.demand = Demand(BACKFILL, duty.tenants)
        self._members: list[Member] | None = None
        self._digest: str | None = None
        self._read_at: datetime | None = None
        self._requests = 0
        self._error: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"members-{duty.set_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def renew(self, duty: MembersDuty) -> None:
        """The hub's newer word on what it holds and which part it wants."""
        with self._lock:
            self.duty = duty

    def report(self) -> MembersReport:
        with self._lock:
            duty, members, name = self.duty, self._members, self._digest
            read_at = None if self._read_at is None else wire_time(self._read_at)
            common: dict = {"set_id": duty.set_id, "read_at": read_at, "requests": self._requests, "error": self._error}
        if members is None:
            return MembersReport(**common)
        total, count = len(members), parts(members)
        if name == duty.held:
            return MembersReport(digest=name, total=total, parts=count, **common)
        index = duty.next_part if duty.receiving == name and duty.next_part < count else 0
        return MembersReport(digest=name, total=total, parts=count, part=index, members=part(members, index),
                             **common)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.read_once()
            except Cancelled:
                return
            except MediaWikiError as exc:
                with self._lock:
                    self._error = f"{type(exc).__name__}: {exc}"
                logger.warning("members.read_failed", extra={"set_id": self.duty.set_id, "error": self._error})
            if self._stop.wait(self.duty.interval_s):
                return

    def read_once(self) -> None:
        """The whole listing, read again; it replaces the last one only once read to its end."""
        members, requests = listing(self._read_category, self.duty.category, self.duty.depth)
        name = digest(members)
        with self._lock:
            changed = name != self._digest
            self._members, self._digest = members, name
            self._read_at = datetime.now(timezone.utc)
            self._requests += requests
            self._error = None
        if changed:
            logger.info("members.listed", extra={"set_id": self.duty.set_id, "members": len(members),
                                                 "requests": requests})

    def _read_category(self, title: str) -> list[Answer]:
        params = {"list": "categorymembers", "cmtitle": title, "cmprop": "ids|title", "cmlimit": "max",
                  "cmtype": "page|subcat|file"}
        answers: list[Answer] = []
        cont: dict = {}
        while True:
            answer = self.client.query({**params, **cont}, cancel=self._stop, demand=self.demand, parse=parse_answer)
            answers.append(answer)
            if answer.more is None:
                return answers
            cont = answer.more


class MembersReaders:
    """The listings this node reads, as the hub's duties say; a detach stops them all."""

    def __init__(self, client_for: ClientFor, *, join_s: float = JOIN_S):
        self._client_for, self.join_s = client_for, join_s
        self._readers: dict[str, MembersReader] = {}
        self._lock = threading.Lock()

    def apply(self, duties: Sequence[MembersDuty]) -> None:
        """Start a reader per named set, renew the running ones' duties, stop the others. A duty for another
        category or depth starts its reader over."""
        named = {d.set_id: d for d in duties}
        with self._lock:
            for set_id in list(self._readers):
                duty, reader = named.get(set_id), self._readers[set_id]
                if duty is None or (duty.wiki, duty.category, duty.depth) != (
                        reader.duty.wiki, reader.duty.category, reader.duty.depth):
                    self._readers.pop(set_id).stop()
            for set_id, duty in named.items():
                if set_id in self._readers:
                    self._readers[set_id].renew(duty)
                    continue
                reader = MembersReader(duty, self._client_for(duty.wiki, duty.identity))
                self._readers[set_id] = reader
                reader.start()
                logger.info("members.started", extra={"set_id": set_id, "category": duty.category,
                                                      "depth": duty.depth})

    def reports(self) -> Mapping[str, MembersReport]:
        with self._lock:
            readers = list(self._readers.values())
        return {r.duty.set_id: r.report() for r in readers}

    def stop(self) -> None:
        with self._lock:
            readers = list(self._readers.values())
            self._readers = {}
        for r in readers:
            r.stop()
        for r in readers:
            r.join(self.join_s)
