"""When a page's stored history is compared with the wiki's, and what a difference means (spawn.completeness)."""
import pytest

from spawn.completeness import check_at, compare

DAY = 86400.0

# (name, caught up at, last checked, when the next check is due)
DUE = [
    ("not caught up: no check", None, None, None),
    ("not caught up, checked before (a new revision is being harvested): no check", None, 50.0, None),
    ("caught up, never checked: one interval later, not at once", 100.0, None, 100.0 + DAY),
    ("checked: one interval after the check", 100.0, 200.0, 200.0 + DAY),
]


@pytest.mark.parametrize("name,caught_up_at,last_checked,due", DUE, ids=[c[0] for c in DUE])
def test_check_at(name, caught_up_at, last_checked, due):
    assert check_at(caught_up_at=caught_up_at, last_checked=last_checked, every_s=DAY) == due


# (name, stored ids, the wiki's ids up to the resume point, missing, extra, equal, complete once repaired)
COMPARE = [
    ("the same ids: complete", [1, 2, 3], [3, 1, 2], (), (), True, True),
    ("an import or undeletion with old timestamps: repaired, then complete", [1, 5], [1, 2, 3, 5], (2, 3), (),
     False, True),
    ("stored revisions the wiki no longer shows (deleted, merged away): not complete", [1, 2, 3], [1, 3], (), (2,),
     False, False),
    ("both at once, equal counts: ids tell, counts would not", [1, 2], [1, 3], (3,), (2,), False, False),
    ("nothing stored yet", [], [4, 7], (4, 7), (), False, True),
]


@pytest.mark.parametrize("name,stored,wiki,missing,extra,equal,complete", COMPARE, ids=[c[0] for c in COMPARE])
def test_compare(name, stored, wiki, missing, extra, equal, complete):
    found = compare(stored, wiki)
    assert (found.missing, found.extra, found.equal, found.complete_after_repair) == (missing, extra, equal, complete)
