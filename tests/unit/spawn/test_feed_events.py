"""What each change feed entry means, as a table over entries recorded from the writable MediaWiki
(recentchanges_writable_wiki.json; tests/support/record_change_feed.py says how they were made)."""
import json
import pathlib
from datetime import datetime, timezone

import pytest

from spawn.feed_events import (HistoryMerged, Imported, MalformedItem, NewRevision, PageCreated, PageDeleted,
                               PageMoved, PageRestored, VisibilityChanged, from_logevent, parse)

RECORDED = json.loads((pathlib.Path(__file__).parent / "recentchanges_writable_wiki.json").read_text())
ITEMS = RECORDED["recentchanges"]
T = "Feed record 225b45ce0004"


def at(hms: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-24T{hms}").replace(tzinfo=timezone.utc)


def page(rcid: int, hms: str, page_id: int, title: str) -> dict:
    return {"rcid": rcid, "timestamp": at(hms), "page_id": page_id, "ns": 0, "title": f"{T} {title}"}


CONTENT_COMMENT = frozenset({"content", "comment"})

TABLE = [
    ("create", PageCreated(**page(73, "07:08:16", 50, "edited"), rev_id=200, parent_id=0)),
    ("edit", NewRevision(**page(74, "07:08:16", 50, "edited"), rev_id=201, parent_id=200)),
    # a move adds a null revision to the moved page
    ("move with redirect", PageMoved(**page(76, "07:08:17", 51, "moved"), new_ns=0, new_title=f"{T} moved away",
                                     redirect_left=True, rev_id=203)),
    ("move without redirect", PageMoved(**page(78, "07:08:17", 53, "moved quietly"), new_ns=0,
                                        new_title=f"{T} moved quietly away", redirect_left=False, rev_id=206)),
    ("delete", PageDeleted(**page(80, "07:08:17", 54, "deleted"))),
    ("restore", PageRestored(**page(81, "07:08:17", 54, "deleted"), revisions=1)),
    ("hide content and comment", VisibilityChanged(**page(84, "07:08:17", 55, "hidden"), rev_ids=(208,),
                                                   hidden_before=frozenset(), hidden_after=CONTENT_COMMENT,
                                                   suppressed=False)),
    ("show content and comment", VisibilityChanged(**page(85, "07:08:17", 55, "hidden"), rev_ids=(208,),
                                                   hidden_before=CONTENT_COMMENT, hidden_after=frozenset(),
                                                   suppressed=False)),
    # the import's own revision is the null revision "2 revisions imported", newer than the two it adds
    ("import upload", Imported(**page(86, "07:08:17", 56, "imported"), source="upload", revisions=2, rev_id=212)),
    ("merge", HistoryMerged(**page(89, "07:08:18", 57, "merge source"), dest_ns=0,
                            dest_title=f"{T} merge destination", merge_point=at("07:08:18"))),
    # a protection adds a null revision to the page and has no edit entry of its own
    ("protect", NewRevision(**page(90, "07:08:18", 50, "edited"), rev_id=216, parent_id=0, log="protect/protect")),
]


@pytest.mark.parametrize("name, event", TABLE, ids=[name for name, _ in TABLE])
def test_each_recorded_entry_is_the_event_of_the_action_that_made_it(name, event):
    assert parse(ITEMS[name]) == event


def test_the_table_covers_every_recorded_entry_but_page_creations():
    untested = set(ITEMS) - {name for name, _ in TABLE}
    assert untested and all(name.startswith("create ") or name == "edit hidden" for name in untested)
    assert all(type(parse(ITEMS[name])) in (PageCreated, NewRevision) for name in untested)


def test_hiding_and_showing_name_what_changed():
    hidden, shown = parse(ITEMS["hide content and comment"]), parse(ITEMS["show content and comment"])
    assert hidden.newly_hidden == CONTENT_COMMENT and not hidden.unhidden
    assert shown.unhidden == CONTENT_COMMENT and not shown.newly_hidden


def test_a_suppression_from_the_suppression_log_reads_like_a_revision_deletion():
    event = parse(from_logevent(RECORDED["logevents"]["suppress user"]))
    assert event == VisibilityChanged(**page(0, "07:08:18", 59, "suppressed"), rev_ids=(217,),
                                      hidden_before=frozenset(), hidden_after=frozenset({"user"}), suppressed=True)


def test_a_page_deleted_with_suppression_is_a_deletion():
    # the suppression log's shape of a deletion: the same entry as delete/delete under type "suppress"
    entry = {**RECORDED["logevents"]["suppress user"], "action": "delete", "params": {}}
    assert parse(from_logevent(entry)) == PageDeleted(**page(0, "07:08:18", 59, "suppressed"))


@pytest.mark.parametrize("name", sorted(RECORDED["unrelated"]))
def test_what_changes_no_history_is_no_event(name):
    assert parse(RECORDED["unrelated"][name]) is None


def test_a_log_entry_whose_action_is_hidden_names_no_page_and_is_no_event():
    hidden = {k: v for k, v in ITEMS["delete"].items() if k not in ("title", "ns", "pageid", "logparams")}
    assert parse({**hidden, "actionhidden": True}) is None


@pytest.mark.parametrize("name, change", [
    ("edit", {"revid": "183"}),
    ("create", {"timestamp": "yesterday"}),
    ("move with redirect", {"logparams": {"target_ns": 0}}),
    ("hide content and comment", {"logparams": {"type": "revision", "ids": []}}),
    ("merge", {"pageid": None}),
])
def test_an_entry_without_what_its_kind_needs_is_malformed(name, change):
    with pytest.raises(MalformedItem):
        parse({**ITEMS[name], **change})
