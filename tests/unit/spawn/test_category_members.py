"""spawn.category_members: listing a category's members with list=categorymembers, down its subcategories, and
reporting the listing to the hub one part per poll. Answers in the shape MediaWiki 1.39 gives (formatversion 2); a
fake client stands in for the wiki, and `responses` once for a real MediaWikiClient."""
import threading
from dataclasses import replace

import pytest
import responses

from shared.http import make_session
from shared.members_wire import PART, Member, MembersDuty, MembersReport, digest, part
from spawn.budget_rules import BACKFILL
from spawn.category_members import Answer, MembersReader, MembersReaders, listing, parse_answer
from spawn.host_limiter import Backoff, HostLimiter
from spawn.mediawiki import ApiError, BadResponse, MediaWikiClient

API = "https://wiki.test/w/api.php"


def item(page_id: int, title: str, ns: int = 0) -> dict:
    return {"pageid": page_id, "ns": ns, "title": title}


def sub(page_id: int, title: str) -> dict:
    return item(page_id, title, 14)


def body(items: list[dict], cont: str | None = None) -> dict:
    answer: dict = {"batchcomplete": True, "query": {"categorymembers": items}}
    if cont is not None:
        answer["continue"] = {"cmcontinue": cont, "continue": "-||"}
    return answer


def pages(first: int, n: int) -> list[dict]:
    return [item(i, f"Page {i}") for i in range(first, first + n)]


class FakeClient:
    """A wiki's categories as canned answers: {cmtitle: [answer, ...]}, each but the last continued with
    cmcontinue "<title>|<index of the next>". Fails every request while `failure` is set."""

    def __init__(self, categories: dict[str, list[list[dict]]]):
        self.categories = categories
        self.calls: list[dict] = []
        self.demands: list = []
        self.failure: Exception | None = None

    def query(self, params: dict, *, cancel, demand, parse):
        self.calls.append(dict(params))
        self.demands.append(demand)
        if self.failure is not None:
            raise self.failure
        title = params["cmtitle"]
        index = int(params["cmcontinue"].rsplit("|", 1)[1]) if "cmcontinue" in params else 0
        answers = self.categories[title]
        cont = f"{title}|{index + 1}" if index + 1 < len(answers) else None
        return parse(body(answers[index], cont))

    def titles(self) -> list[str]:
        return [c["cmtitle"] for c in self.calls]


def duty(category: str = "Category:A", **kw) -> MembersDuty:
    return MembersDuty(set_id=kw.pop("set_id", "s1"), wiki=kw.pop("wiki", API), category=category,
                       **{"interval_s": 3600.0, **kw})


def wait_for(condition, timeout: float = 5.0) -> bool:
    pause = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return True
        pause.wait(0.01)
    return condition()


# -- parse_answer ----------------------------------------------------------------------------------------------

def test_an_answer_separates_subcategories_from_pages_and_files():
    answer = parse_answer(body([item(1, "Atom"), sub(2, "Category:Quarks"), item(3, "File:Atom.png", 6),
                                item(4, "Talk:Atom", 1)], "page|4|5"))
    assert answer.members == [Member(1, 0, "Atom"), Member(3, 6, "File:Atom.png"), Member(4, 1, "Talk:Atom")]
    assert answer.subcategories == ["Category:Quarks"]
    assert answer.more == {"cmcontinue": "page|4|5", "continue": "-||"}


@pytest.mark.parametrize("answer, members, subcategories", [
    (body([]), [], []),
    (body([sub(2, "Category:B"), sub(3, "Category:C")]), [], ["Category:B", "Category:C"]),
    ({"query": {"categorymembers": [item(1, "A")]}}, [Member(1, 0, "A")], []),
])
def test_answers_without_pages_or_without_a_continuation(answer, members, subcategories):
    parsed = parse_answer(answer)
    assert (parsed.members, parsed.subcategories, parsed.more) == (members, subcategories, None)


@pytest.mark.parametrize("answer", [
    {},
    {"query": {}},
    {"query": []},
    {"query": {"categorymembers": {}}},
    {"query": {"categorymembers": None}},
    {"query": {"categorymembers": ["Atom"]}},
    {"query": {"categorymembers": [{"pageid": 1, "ns": 0}]}},
    {"query": {"categorymembers": [{"pageid": "1", "ns": 0, "title": "A"}]}},
    {"query": {"categorymembers": [{"pageid": 1, "ns": "0", "title": "A"}]}},
    {"query": {"categorymembers": [{"pageid": 1, "ns": 0, "title": None}]}},
    {"query": {"categorymembers": [{"ns": 14, "title": "Category:B"}]}},
    {"query": {"categorymembers": []}, "continue": "page|4|5"},
    {"query": {"categorymembers": []}, "continue": ["page|4|5"]},
])
def test_a_malformed_answer_is_refused_whole(answer):
    with pytest.raises(BadResponse):
        parse_answer(answer)


# -- listing ---------------------------------------------------------------------------------------------------

def answers(*items: dict) -> list[Answer]:
    """One category's listing in one answer."""
    return [parse_answer(body(list(items)))]


TREE = {
    "Category:A": answers(item(1, "One"), item(2, "Two"), sub(20, "Category:B")),
    "Category:B": answers(item(3, "Three"), sub(30, "Category:C")),
    "Category:C": answers(item(4, "Four"), sub(40, "Category:D")),
    "Category:D": answers(item(5, "Five")),
}
LOOP = {
    "Category:A": answers(item(1, "One"), sub(20, "Category:B")),
    "Category:B": answers(item(2, "Two"), sub(10, "Category:A"), sub(20, "Category:B")),
}
TWICE = {   # page 3 is in A and in B, C is below both A and B
    "Category:A": answers(item(1, "One"), item(3, "Three"), sub(20, "Category:B"), sub(30, "Category:C")),
    "Category:B": answers(item(3, "Three"), item(2, "Two"), sub(30, "Category:C")),
    "Category:C": answers(item(3, "Three"), item(4, "Four")),
}
CONTINUED = {
    "Category:A": [parse_answer(body([item(1, "One"), sub(20, "Category:B")], "x")),
                   parse_answer(body([item(2, "Two")]))],
    "Category:B": [parse_answer(body([item(3, "Three")], "y")), parse_answer(body([], "z")),
                   parse_answer(body([item(4, "Four")]))],
}


@pytest.mark.parametrize("tree, depth, page_ids, read, requests", [
    (TREE, 0, [1, 2], ["Category:A"], 1),                                   # subcategories ignored
    (TREE, 1, [1, 2, 3], ["Category:A", "Category:B"], 2),
    (TREE, 2, [1, 2, 3, 4], ["Category:A", "Category:B", "Category:C"], 3),
    (TREE, 3, [1, 2, 3, 4, 5], ["Category:A", "Category:B", "Category:C", "Category:D"], 4),
    (TREE, 9, [1, 2, 3, 4, 5], ["Category:A", "Category:B", "Category:C", "Category:D"], 4),
    (LOOP, 0, [1], ["Category:A"], 1),
    (LOOP, 5, [1, 2], ["Category:A", "Category:B"], 2),                     # A -> B -> A: each read once
    (TWICE, 0, [1, 3], ["Category:A"], 1),
    (TWICE, 1, [1, 2, 3, 4], ["Category:A", "Category:B", "Category:C"], 3),
    (TWICE, 2, [1, 2, 3, 4], ["Category:A", "Category:B", "Category:C"], 3),
    (CONTINUED, 0, [1, 2], ["Category:A"], 2),                              # a request per answer
    (CONTINUED, 1, [1, 2, 3, 4], ["Category:A", "Category:B"], 5),
])
def test_listing_reads_down_to_the_depth_each_category_once(tree, depth, page_ids, read, requests):
    titles: list[str] = []

    def reader(title: str) -> list[Answer]:
        titles.append(title)
        return tree[title]
    members, spent = listing(reader, "Category:A", depth)
    assert [m.page_id for m in members] == page_ids       # each page once, sorted by page id
    assert titles == read
    assert spent == requests


def test_a_category_of_only_subcategories_lists_their_pages_not_them():
    tree = {"Category:A": answers(sub(20, "Category:B")), "Category:B": answers(item(3, "Three"))}
    assert listing(tree.__getitem__, "Category:A", 1) == ([Member(3, 0, "Three")], 2)
    assert listing(tree.__getitem__, "Category:A", 0) == ([], 1)


# -- MembersReader ---------------------------------------------------------------------------------------------

BIG = {"Category:A": [pages(1, PART), pages(PART + 1, 5) + [sub(90_000, "Category:B")]],
       "Category:B": [pages(PART + 6, PART - 1)]}
LISTED = [Member(i, 0, f"Page {i}") for i in range(1, 2 * PART + 5)]      # depth 1: 2 * PART + 4 members, 3 parts
NAME = digest(LISTED)


def test_a_reader_lists_with_categorymembers_following_continuations_in_the_backfill_lane():
    client = FakeClient({"Category:A": [[item(1, "One"), sub(20, "Category:B")], [item(2, "Two")]],
                         "Category:B": [[item(3, "Three")]]})
    reader = MembersReader(duty(depth=1, tenants=("t1",)), client)
    reader.read_once()
    first, second, third = client.calls
    assert first == {"list": "categorymembers", "cmtitle": "Category:A", "cmprop": "ids|title", "cmlimit": "max",
                     "cmtype": "page|subcat|file"}
    assert second == {**first, "cmcontinue": "Category:A|1", "continue": "-||"}
    assert third == {**first, "cmtitle": "Category:B"}
    assert {(d.lane, d.tenants) for d in client.demands} == {(BACKFILL, ("t1",))}
    report = reader.report()
    assert (report.total, report.parts, report.part, report.requests, report.error) == (3, 1, 0, 3, None)
    assert report.members == (Member(1, 0, "One"), Member(2, 0, "Two"), Member(3, 0, "Three"))
    assert report.digest == digest(report.members) and report.read_at.endswith("Z")


@pytest.mark.parametrize("read, given, expected", [
    # nothing read yet: a bare report, whatever the hub holds or wants
    (False, {}, dict(digest=None, total=0, parts=0, part=None, members=0, requests=0)),
    (False, dict(held=NAME, receiving=NAME, next_part=2), dict(digest=None, total=0, parts=0, part=None)),
    # the hub holds nothing yet, or another listing: part 0
    (True, {}, dict(digest=NAME, total=2 * PART + 4, parts=3, part=0, members=PART, requests=3)),
    (True, dict(held="0" * 32), dict(part=0, members=PART)),
    # the hub holds this listing: its digest alone
    (True, dict(held=NAME), dict(digest=NAME, total=2 * PART + 4, parts=3, part=None, members=0)),
    (True, dict(held=NAME, receiving=NAME, next_part=1), dict(part=None, members=0)),
    # the hub takes this listing in: the part it wants next
    (True, dict(receiving=NAME, next_part=1), dict(part=1, members=PART, first=PART + 1)),
    (True, dict(receiving=NAME, next_part=2), dict(part=2, members=4, first=2 * PART + 1)),
    (True, dict(held="0" * 32, receiving=NAME, next_part=2), dict(part=2, members=4)),
    # ... but not past its end, nor of another listing
    (True, dict(receiving=NAME, next_part=3), dict(part=0, members=PART, first=1)),
    (True, dict(receiving="0" * 32, next_part=1), dict(part=0, members=PART, first=1)),
])
def test_a_report_carries_what_the_hub_lacks(read, given, expected):
    client = FakeClient(BIG)
    reader = MembersReader(duty(depth=1, **given), client)
    if read:
        reader.read_once()
    report = reader.report()
    expected = dict(expected)
    first = expected.pop("first", None)
    count = expected.pop("members", None)
    for name, value in expected.items():
        assert getattr(report, name) == value, name
    if count is not None:
        assert len(report.members) == count
    if first is not None:
        assert report.members[0].page_id == first
    if report.part is not None:
        assert report.members == part(LISTED, report.part)
    assert report.set_id == "s1" and (report.read_at is None) == (not read)
    assert MembersReport.from_dict(report.to_dict()) == report        # it travels


def hub_takes(reader: MembersReader, *, lose: set[int] = frozenset(), listing_changes=None, limit: int = 20):
    """The hub's side: ack each part by asking for the next, holding the listing once it has every part; reports
    numbered in `lose` never arrive; `listing_changes(n)` runs before report n. Returns the parts taken in order
    and the members held."""
    taken: list[tuple[str, int]] = []
    receiving: dict[int, tuple[Member, ...]] = {}
    held: tuple[Member, ...] | None = None
    for n in range(limit):
        if listing_changes is not None:
            listing_changes(n)
        report = reader.report()
        if n in lose:
            continue
        if report.part is None:
            assert report.digest == reader.duty.held
            return taken, held
        assert report.digest is not None
        if reader.duty.receiving != report.digest:
            receiving = {}
        assert report.part not in receiving, "a part is never taken twice"
        taken.append((report.digest, report.part))
        receiving[report.part] = report.members
        if len(receiving) == report.parts:
            held = tuple(m for i in range(report.parts) for m in receiving[i])
            assert len(held) == report.total and digest(held) == report.digest
            reader.renew(replace(reader.duty, held=report.digest, receiving=None, next_part=0))
        else:
            reader.renew(replace(reader.duty, receiving=report.digest, next_part=report.part + 1))
    raise AssertionError(f"the hub never held the listing: {taken}")


def test_a_listing_longer_than_a_part_travels_in_parts_and_arrives_whole():
    reader = MembersReader(duty(depth=1), FakeClient(BIG))
    reader.read_once()
    taken, held = hub_takes(reader)
    assert taken == [(NAME, 0), (NAME, 1), (NAME, 2)]
    assert list(held) == LISTED and len(set(held)) == len(held)


def test_a_lost_report_is_sent_again():
    reader = MembersReader(duty(depth=1), FakeClient(BIG))
    reader.read_once()
    taken, held = hub_takes(reader, lose={1, 3})
    assert taken == [(NAME, 0), (NAME, 1), (NAME, 2)] and list(held) == LISTED


def test_a_listing_changed_while_it_travels_is_sent_again_from_its_start():
    client = FakeClient(BIG)
    reader = MembersReader(duty(depth=1), client)
    reader.read_once()
    moved = [item(1, "Page 1 (moved)")] + pages(2, PART - 1)

    def change(n: int) -> None:
        if n == 2:          # after parts 0 and 1 of the first listing: page 1 moves
            client.categories = {**BIG, "Category:A": [moved, BIG["Category:A"][1]]}
            reader.read_once()
    taken, held = hub_takes(reader, listing_changes=change)
    now = [Member(1, 0, "Page 1 (moved)")] + LISTED[1:]
    assert taken == [(NAME, 0), (NAME, 1), (digest(now), 0), (digest(now), 1), (digest(now), 2)]
    assert list(held) == now


def test_a_listing_read_again_unchanged_is_its_digest_alone():
    client = FakeClient(BIG)
    reader = MembersReader(duty(depth=1), client)
    reader.read_once()
    hub_takes(reader)
    reader.read_once()
    report = reader.report()
    assert (report.digest, report.part, report.members, report.requests) == (NAME, None, (), 6)


def test_a_failed_reading_is_reported_and_the_listing_before_it_stands():
    client = FakeClient({"Category:A": [[item(1, "One")]]})
    reader = MembersReader(duty(interval_s=0.01), client)
    reader.start()
    try:
        assert wait_for(lambda: reader.report().digest is not None)
        client.failure = ApiError("readapidenied", "You need read permission")
        assert wait_for(lambda: reader.report().error is not None)
        report = reader.report()
        assert "ApiError" in report.error and "read permission" in report.error
        assert (report.digest, report.members) == (digest([Member(1, 0, "One")]), (Member(1, 0, "One"),))
        client.failure = None
        assert wait_for(lambda: reader.report().error is None)
    finally:
        reader.stop()
        reader.join(2.0)


# -- MembersReaders --------------------------------------------------------------------------------------------

class Clients:
    def __init__(self, client: FakeClient):
        self.client, self.asked = client, []

    def __call__(self, wiki: str, identity: str | None) -> FakeClient:
        self.asked.append((wiki, identity))
        return self.client


@pytest.fixture
def readers():
    clients = Clients(FakeClient({**BIG, "Category:Z": [[item(7, "Seven")]]}))
    made = MembersReaders(clients, join_s=2.0)
    made.clients = clients          # type: ignore[attr-defined]
    yield made
    made.stop()


def listed(readers: MembersReaders, set_id: str = "s1") -> bool:
    report = readers.reports().get(set_id)
    return report is not None and report.digest is not None


def test_a_reader_starts_per_duty(readers):
    readers.apply([duty(depth=1, identity="bot"), duty("Category:Z", set_id="s2")])
    assert set(readers.reports()) == {"s1", "s2"}
    assert wait_for(lambda: listed(readers, "s1") and listed(readers, "s2"))
    assert readers.reports()["s1"].total == 2 * PART + 4
    assert readers.reports()["s2"].members == (Member(7, 0, "Seven"),)
    assert sorted(readers.clients.asked, key=str) == [(API, "bot"), (API, None)]


def test_a_duty_for_the_same_listing_renews_its_reader(readers):
    readers.apply([duty(depth=1)])
    reader = readers._readers["s1"]
    assert wait_for(lambda: listed(readers))
    requests = readers.reports()["s1"].requests
    readers.apply([duty(depth=1, receiving=NAME, next_part=2)])
    assert readers._readers["s1"] is reader and len(readers.clients.asked) == 1
    report = readers.reports()["s1"]
    assert (report.part, report.members) == (2, part(LISTED, 2))
    assert report.requests == requests              # not read again
    readers.apply([duty(depth=1, held=NAME)])
    assert readers.reports()["s1"].part is None and readers._readers["s1"] is reader


@pytest.mark.parametrize("changed, same_listing", [
    (dict(category="Category:Z"), False),
    (dict(depth=0), False),
    (dict(wiki="https://other.test/w/api.php"), True),     # the fake answers every wiki alike
])
def test_a_duty_for_another_listing_starts_its_reader_over(readers, changed, same_listing):
    readers.apply([duty(depth=1)])
    old = readers._readers["s1"]
    assert wait_for(lambda: listed(readers))
    readers.apply([replace(duty(depth=1), **changed)])
    new = readers._readers["s1"]
    assert new is not old and new.duty == replace(duty(depth=1), **changed)
    assert readers.clients.asked == [(API, None), (new.duty.wiki, None)]
    old.join(2.0)
    assert not old._thread.is_alive()
    assert wait_for(lambda: listed(readers))
    assert (readers.reports()["s1"].digest == NAME) == same_listing


def test_a_set_no_longer_named_is_stopped(readers):
    readers.apply([duty(depth=1), duty("Category:Z", set_id="s2")])
    old = readers._readers["s1"]
    readers.apply([duty("Category:Z", set_id="s2")])
    assert set(readers.reports()) == {"s2"}
    old.join(2.0)
    assert not old._thread.is_alive()
    readers.apply([])
    assert readers.reports() == {}


def test_stop_ends_every_reader(readers):
    readers.apply([duty(depth=1), duty("Category:Z", set_id="s2")])
    running = list(readers._readers.values())
    readers.stop()
    assert readers.reports() == {}
    assert not any(r._thread.is_alive() for r in running)


# -- a real client ---------------------------------------------------------------------------------------------

def client() -> MediaWikiClient:
    return MediaWikiClient(make_session("MembersTests/1.0 (tests@example.org)"), API, limiter=HostLimiter(0.0),
                           maxlag=5, timeout=(1.0, 1.0), backoff=Backoff(base_s=0.0))


@responses.activate
def test_a_real_client_reads_the_listing_and_fetches_a_malformed_answer_again():
    responses.add(responses.GET, API, json=body([item(1, "One"), sub(20, "Category:B")], "page|2|2"))
    responses.add(responses.GET, API, json={"batchcomplete": True, "query": {}})          # malformed: again
    responses.add(responses.GET, API, json=body([item(2, "Two", 6)]))
    responses.add(responses.GET, API, json=body([item(3, "Three"), item(1, "One")]))
    reader = MembersReader(duty(depth=1), client())
    reader.read_once()
    params = [c.request.params for c in responses.calls]
    assert [p["cmtitle"] for p in params] == ["Category:A"] * 3 + ["Category:B"]
    assert "cmcontinue" not in params[0] and params[1]["cmcontinue"] == params[2]["cmcontinue"] == "page|2|2"
    assert all((p["action"], p["list"], p["formatversion"]) == ("query", "categorymembers", "2") for p in params)
    report = reader.report()
    assert report.members == (Member(1, 0, "One"), Member(2, 6, "Two"), Member(3, 0, "Three"))
    assert report.requests == 3              # answers taken: the malformed one is not counted
