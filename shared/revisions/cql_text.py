"""The Cassandra side of history-native wikitext (shared/revisions/text_history.py decides what to store):
the reads a write needs, the rows it writes, the two-query read of one revision's text, and the removal
of one revision's text (revision deletion)."""
from collections import OrderedDict
from typing import Callable, Sequence

from shared.revisions.cql_batches import unlogged
from shared.revisions.model import Revision
from shared.revisions.store import StoreError
from shared.revisions.text_history import (
    DICTIONARY_BLOB, Group, Plan, TextInput, decode, digest, plan_texts, rebuild_group)

GROUP_CACHE_PAGES = 256             # pages whose current group (anchor text included) is remembered
_IN_LIMIT = 100                      # values of one `sha1 IN ?`

TEXT_CQL = {
    "text_known": "SELECT sha1, grp, blob FROM {ks}.text_sha1 WHERE wiki = ? AND page_id = ? AND sha1 IN ?",
    "text_newest_group": "SELECT grp FROM {ks}.text_groups WHERE wiki = ? AND page_id = ? LIMIT 1",
    "text_group_rows": "SELECT blob, base, codec, body, revs FROM {ks}.text_blobs "
                       "WHERE wiki = ? AND page_id = ? AND grp = ?",
    "text_blob": "UPDATE {ks}.text_blobs SET base = ?, codec = ?, body = ? "
                 "WHERE wiki = ? AND page_id = ? AND grp = ? AND blob = ?",
    "text_ref": "UPDATE {ks}.text_blobs SET revs = revs + ? WHERE wiki = ? AND page_id = ? AND grp = ? AND blob = ?",
    "text_unref": "UPDATE {ks}.text_blobs SET revs = revs - ? WHERE wiki = ? AND page_id = ? AND grp = ? "
                  "AND blob = ?",
    "text_group": "INSERT INTO {ks}.text_groups (wiki, page_id, grp) VALUES (?, ?, ?)",
    "text_sha1": "INSERT INTO {ks}.text_sha1 (wiki, page_id, sha1, grp, blob) VALUES (?, ?, ?, ?, ?)",
    "text_pointer": "INSERT INTO {ks}.revision_text (wiki, rev_id, page_id, content_model, sha1, grp, blob) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
    "text_where": "SELECT page_id, sha1, grp, blob FROM {ks}.revision_text WHERE wiki = ? AND rev_id = ?",
    "text_rows": "SELECT blob, base, codec, body FROM {ks}.text_blobs "
                 "WHERE wiki = ? AND page_id = ? AND grp = ? AND blob IN (0, ?)",
    "text_drop_pointer": "DELETE FROM {ks}.revision_text WHERE wiki = ? AND rev_id = ?",
    "text_drop_blob": "DELETE FROM {ks}.text_blobs WHERE wiki = ? AND page_id = ? AND grp = ? AND blob = ?",
    "text_drop_partition": "DELETE FROM {ks}.text_blobs WHERE wiki = ? AND page_id = ? AND grp = ?",
    "text_drop_group": "DELETE FROM {ks}.text_groups WHERE wiki = ? AND page_id = ? AND grp = ?",
    "text_drop_sha1": "DELETE FROM {ks}.text_sha1 WHERE wiki = ? AND page_id = ? AND sha1 = ?",
}

Run = Callable[[list[tuple]], list]


class TextWriter:
    """Plans and writes the texts of one page's revisions. `ps` holds TEXT_CQL prepared; `run` runs
    statements concurrently at the write level (the store's _run)."""

    def __init__(self, ps: dict, run: Run):
        self._ps = ps
        self._run = run
        self._groups: OrderedDict[tuple[str, int], Group] = OrderedDict()

    def prepare(self, wiki: str, page_id: int, revisions: Sequence[Revision]) -> tuple[list[tuple], list[tuple]]:
        """(bodies, pointers): the statements to run before the revision rows (blobs, groups) and
        with them (sha1 index and revision_text rows, which must never point at a missing blob)."""
        with_text = sorted((r for r in revisions if r.content is not None), key=lambda r: (r.timestamp, r.rev_id))
        if not with_text:
            return [], []
        plan = plan_texts([TextInput(r.rev_id, r.content) for r in with_text if r.content is not None],
                          self._known(wiki, page_id, with_text), self._group(wiki, page_id))
        self._remember(wiki, page_id, plan.group)
        return self._bodies(wiki, page_id, plan), self._pointers(wiki, page_id, plan, with_text)

    def forget(self, wiki: str, page_id: int) -> None:
        """A failed write or a rebuilt group: read the page's group from storage next time."""
        self._groups.pop((wiki, page_id), None)

    def _known(self, wiki: str, page_id: int, revisions: list[Revision]) -> dict[str, tuple[int, int]]:
        digests = sorted({digest(r.content) for r in revisions if r.content is not None})
        chunks = [digests[i:i + _IN_LIMIT] for i in range(0, len(digests), _IN_LIMIT)]
        results = self._run([(self._ps["text_known"], (wiki, page_id, chunk)) for chunk in chunks])
        return {row.sha1: (row.grp, row.blob) for rows in results for row in rows}

    def _group(self, wiki: str, page_id: int) -> Group | None:
        cached = self._groups.get((wiki, page_id))
        if cached is not None:
            self._groups.move_to_end((wiki, page_id))
            return cached
        newest = self._run([(self._ps["text_newest_group"], (wiki, page_id))])[0].one()
        if newest is None:
            return None
        rows = list(self._run([(self._ps["text_group_rows"], (wiki, page_id, newest.grp))])[0])
        dictionary = next((row for row in rows if row.blob == DICTIONARY_BLOB and row.body), None)
        if dictionary is None:
            return None                 # emptied by revision deletion: the next text opens a group
        return Group.from_dictionary(newest.grp, dictionary.body, sum(1 for row in rows if row.blob and row.body))

    def _remember(self, wiki: str, page_id: int, group: Group | None) -> None:
        if group is None:
            return
        self._groups[(wiki, page_id)] = group
        self._groups.move_to_end((wiki, page_id))
        while len(self._groups) > GROUP_CACHE_PAGES:
            self._groups.popitem(last=False)

    def _bodies(self, wiki: str, page_id: int, plan: Plan) -> list[tuple]:
        ps = self._ps
        out: list[tuple] = [(ps["text_blob"], (b.base, b.codec, b.body, wiki, page_id, b.grp, b.blob))
                            for b in plan.blobs]
        out += [(ps["text_ref"], ({*revs}, wiki, page_id, grp, blob)) for (grp, blob), revs in plan.refs.items()]
        out += [(ps["text_group"], (wiki, page_id, grp)) for grp in plan.groups]
        return out

    def _pointers(self, wiki: str, page_id: int, plan: Plan, revisions: list[Revision]) -> list[tuple]:
        ps, models = self._ps, {r.rev_id: r.content_model for r in revisions}
        out: list[tuple] = [(ps["text_sha1"], (wiki, page_id, sha1, grp, blob))
                            for sha1, (grp, blob) in plan.new_digests.items()]
        out += [(ps["text_pointer"], (wiki, p.rev_id, page_id, models[p.rev_id], p.sha1, p.grp, p.blob))
                for p in plan.pointers]
        return out


def read_text(ps: dict, read: Callable, wiki: str, rev_id: int) -> str | None:
    """A revision's text in two single-partition queries: its revision_text row, then its group's
    dictionary and blob rows. None when it has no stored text."""
    where = read(ps["text_where"], (wiki, rev_id)).one()
    if where is None or where.blob is None:
        return None
    rows = {row.blob: row for row in read(ps["text_rows"], (wiki, where.page_id, where.grp, where.blob))}
    dictionary, blob = rows.get(DICTIONARY_BLOB), rows.get(where.blob)
    if dictionary is None or blob is None or dictionary.body is None or blob.body is None:
        raise StoreError(f"text of {wiki} revision {rev_id}: group {where.grp} lacks its dictionary or blob")
    if dictionary.base != blob.base:
        raise StoreError(f"text of {wiki} revision {rev_id}: blob made with dictionary {blob.base}, "
                         f"group {where.grp} holds {dictionary.base}")
    return decode(dictionary.body, blob.body)


def remove_text(ps: dict, run: Run, execute: Callable, wiki: str, rev_id: int) -> bool:
    """Remove one revision's text (revision deletion). Its pointer goes; its blob goes once no other
    revision has that text; when the blob is the group's anchor, the group is rebuilt around another
    of its texts in one single-partition batch (atomic and isolated). False when it had no text."""
    where = run([(ps["text_where"], (wiki, rev_id))])[0].one()
    if where is None:
        return False
    key = (wiki, where.page_id, where.grp)
    run([(ps["text_drop_pointer"], (wiki, rev_id)), (ps["text_unref"], ({rev_id}, *key, where.blob))])
    rows = {row.blob: row for row in run([(ps["text_group_rows"], key)])[0]}
    if rows.get(where.blob) is not None and rows[where.blob].revs:
        return True                     # the same text is another revision's, which stays visible
    statements = [(ps["text_drop_sha1"], (wiki, where.page_id, where.sha1))]
    dictionary = rows.get(DICTIONARY_BLOB)
    if dictionary is None or dictionary.base != where.blob:
        run(statements + [(ps["text_drop_blob"], (*key, where.blob))])
        return True
    texts = {blob: decode(dictionary.body, row.body) for blob, row in rows.items()
             if blob not in (DICTIONARY_BLOB, where.blob) and row.body is not None and row.base == dictionary.base}
    rebuilt = rebuild_group(where.grp, texts)
    if not rebuilt:
        run(statements + [(ps["text_drop_partition"], key), (ps["text_drop_group"], key)])
        return True
    batch = [(ps["text_blob"], (b.base, b.codec, b.body, *key, b.blob)) for b in rebuilt]
    execute(unlogged(batch + [(ps["text_drop_blob"], (*key, where.blob))]))
    run(statements)
    return True
