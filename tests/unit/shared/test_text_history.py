"""What the history-native text plan stores: table tests of shared.revisions.text_history."""
import random
import string

import pytest

from shared.revisions.text_history import (
    CODEC_BLOB, CODEC_DICTIONARY, DICTIONARY_BLOB, GROUP_BLOBS, Group, TextInput, compress_dictionary, decode,
    digest, plan_texts, rebuild_group)

BASE = "== Spider silk ==\n" + "Silk is a protein fibre spun by spiders and used for webs. " * 300


def edits(n: int, start: int = 100) -> list[TextInput]:
    return [TextInput(start + i, BASE + "".join(f"Sentence {k}.\n" for k in range(i))) for i in range(n)]


def texts_of(plan) -> dict[int, str]:
    """rev_id -> text decoded from the plan's own rows."""
    rows = {(b.grp, b.blob): b for b in plan.blobs}
    return {p.rev_id: decode(rows[(p.grp, DICTIONARY_BLOB)].body, rows[(p.grp, p.blob)].body)
            for p in plan.pointers}


@pytest.mark.parametrize("texts, groups, blobs, note", [
    (edits(1), 1, 1, "a first text opens a group: a dictionary row and its own blob"),
    (edits(10), 1, 10, "near-copies join the anchor's group"),
    (edits(GROUP_BLOBS + 1), 2, GROUP_BLOBS + 1, "a full group opens the next"),
    (edits(3) + [TextInput(200, "".join(random.Random(1).choices(string.ascii_letters + " ", k=20_000)))], 2, 4,
     "a text unlike its anchor opens a group"),
    (edits(3) + [TextInput(300, edits(2)[1].text)], 1, 3, "a revert stores no body"),
])
def test_plan(texts, groups, blobs, note):
    plan = plan_texts(texts, {}, None)
    assert len(plan.groups) == groups, note
    assert sum(1 for b in plan.blobs if b.blob != DICTIONARY_BLOB) == blobs, note
    assert texts_of(plan) == {t.rev_id: t.text for t in texts}, note
    assert {b.codec for b in plan.blobs if b.blob == DICTIONARY_BLOB} == {CODEC_DICTIONARY}
    assert {b.codec for b in plan.blobs if b.blob != DICTIONARY_BLOB} == {CODEC_BLOB}


def test_known_digests_and_the_current_group_are_used():
    first = plan_texts(edits(5), {}, None)
    later = edits(8)[5:]
    again = plan_texts(edits(3) + later, first.new_digests, first.group)
    assert again.groups == [] and again.new_digests.keys() == {digest(t.text) for t in later}
    assert {p.rev_id: p.blob for p in again.pointers if p.rev_id < 103} == {100: 100, 101: 101, 102: 102}
    assert {b.grp for b in again.blobs} == {100}


def test_a_group_read_back_from_its_dictionary_continues_alike():
    first = plan_texts(edits(4), {}, None)
    dictionary = next(b for b in first.blobs if b.blob == DICTIONARY_BLOB)
    group = Group.from_dictionary(first.group.grp, dictionary.body, first.group.blobs)
    assert (group.anchor, group.dictionary_size, group.blobs) == (first.group.anchor, first.group.dictionary_size, 4)


def test_near_copies_are_small():
    plan = plan_texts(edits(30), {}, None)
    raw = sum(len(t.text.encode()) for t in edits(30))
    assert plan.body_bytes * 20 < raw


@pytest.mark.parametrize("keep, base", [({101: "b", 103: "d"}, 101), ({105: "only"}, 105), ({}, None)])
def test_rebuild_group_keeps_ids_and_anchors_on_the_lowest(keep, base):
    rows = rebuild_group(100, keep)
    if base is None:
        assert rows == []
        return
    dictionary = rows[0]
    assert (dictionary.blob, dictionary.base) == (DICTIONARY_BLOB, base)
    assert {r.blob: decode(dictionary.body, r.body) for r in rows[1:]} == keep
    assert {r.grp for r in rows} == {100} and {r.base for r in rows} == {base}


def test_dictionary_round_trip():
    body = compress_dictionary(BASE.encode())
    assert Group.from_dictionary(1, body, 0).anchor == BASE.encode()


def test_a_text_added_to_a_group_rebuilt_around_another_anchor_is_made_with_that_anchor():
    first = plan_texts(edits(3), {}, None)              # group 100, anchored on 100
    texts = {p.rev_id: t.text for p, t in zip(first.pointers, edits(3)) if p.rev_id != 100}
    rows = rebuild_group(100, texts)                    # 100's text hidden: anchored on 101 now
    dictionary = rows[0]
    group = Group.from_dictionary(100, dictionary.body, len(rows) - 1, dictionary.base)
    later = plan_texts([TextInput(100, edits(3)[0].text)], {}, group)   # the text shown again
    (blob,) = later.blobs
    assert (blob.grp, blob.base) == (100, 101)
    assert decode(dictionary.body, blob.body) == edits(3)[0].text
