"""The pure rules for moved, deleted and undeleted pages (spawn.page_fate)."""
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from spawn.mediawiki import PageInfo
from shared.revisions.model import PageState
from spawn.page_fate import Fate, missing_title, retitled, undeleted_unseen, up_to
from tests.unit.spawn.fakes import make_revisions

PAGE = PageInfo(7, 0, "Page", 104)
REVS = make_revisions(5)            # rev ids 100..104, title "Page", ns 0

# (name, page id the title had when stored, what the wiki answers for that id, fate)
MISSING = [
    ("never resolved here: the wiki's message stands", None, None, Fate.UNKNOWN),
    ("never resolved, even if some page answers", None, PAGE, Fate.UNKNOWN),
    ("its page id answers as missing too: deleted", 7, None, Fate.DELETED),
    ("its page id answers under another title: moved without a redirect", 7, replace(PAGE, title="New"),
     Fate.MOVED),
]


@pytest.mark.parametrize("name,known,by_id,fate", MISSING, ids=[c[0] for c in MISSING])
def test_missing_title(name, known, by_id, fate):
    assert missing_title(known, by_id) is fate


# (name, page, written batch, expected page or None)
RETITLED = [
    ("no revision: nothing known", PAGE, [], None),
    ("same title: not moved", PAGE, REVS, None),
    ("newest carries another title: moved", PAGE, [*REVS[:-1], replace(REVS[-1], title="New")],
     PageInfo(7, 0, "New", 104)),
    ("moved to another namespace", PAGE, [replace(r, ns=4, title="Project:Page") for r in REVS],
     PageInfo(7, 4, "Project:Page", 104)),
    ("the move's null revision is newer than the page seen", replace(PAGE, last_rev_id=90),
     [replace(r, title="New") for r in REVS], PageInfo(7, 0, "New", 104)),
    ("an older title in the batch, the newest as the page: not moved", PAGE,
     [replace(REVS[0], title="Old"), *REVS[1:]], None),
]


@pytest.mark.parametrize("name,page,batch,expected", RETITLED, ids=[c[0] for c in RETITLED])
def test_retitled(name, page, batch, expected):
    assert retitled(page, batch) == expected


# (name, last stored (timestamp, rev id), rev ids kept of REVS)
UP_TO = [
    ("the whole batch is stored range", (REVS[-1].timestamp, REVS[-1].rev_id), [100, 101, 102, 103, 104]),
    ("stops at the resume point", (REVS[2].timestamp, REVS[2].rev_id), [100, 101, 102]),
    ("same second, higher id is past it", (REVS[2].timestamp, REVS[2].rev_id - 1), [100, 101]),
    ("before the first: nothing", (REVS[0].timestamp, 1), []),
]


@pytest.mark.parametrize("name,last,kept", UP_TO, ids=[c[0] for c in UP_TO])
def test_up_to(name, last, kept):
    assert [r.rev_id for r in up_to(REVS, last)] == kept


STORED = PageState("wiki.test", 7, "Page", 104, datetime(2020, 1, 1, tzinfo=timezone.utc), 5)
# (name, stored page row, page id the title resolved to, re-read?)
UNSEEN = [
    ("nothing stored", None, 7, False),
    ("stored, not deleted", STORED, 7, False),
    ("stored as deleted, the same page is back", replace(STORED, deleted=True), 7, True),
    ("stored as deleted, the title now names another page", replace(STORED, deleted=True), 8, False),
]


@pytest.mark.parametrize("name,stored,resolved,reread", UNSEEN, ids=[c[0] for c in UNSEEN])
def test_undeleted_unseen(name, stored, resolved, reread):
    assert undeleted_unseen(stored, resolved) is reread
