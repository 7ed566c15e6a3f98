"""The Cassandra side of history-native wikitext (shared/revisions/text_history.py decides what to store):
the reads a write needs, the rows it writes, the two-query read of one revision's text, and the removal
of one revision's text (revision deletion)."""
from collections import OrderedDict
from typing import Callable, Sequence

from shared.revisions.cql_batches import unlogged
from shared.revisions.cql_in import chunks
from shared.revisions.derived import PageRows
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
    # page deletion (remove_page_texts)
    "text_page_groups": "SELECT grp FROM {ks}.text_groups WHERE wiki = ? AND page_id = ?",
    "text_group_revs": "SELECT revs FROM {ks}.text_blobs WHERE wiki = ? AND page_id = ? AND grp = ?",
    "text_drop_page_sha1": "DELETE FROM {ks}.text_sha1 WHERE wiki = ? AND page_id = ?",
    "text_drop_page_groups": "DELETE FROM {ks}.text_groups WHERE wiki = ? AND page_id = ?",
}

Run = Callable[[list[tuple]], list]


class TextWriter:
    """Plans and writes the texts of pages' revisions. `ps` holds TEXT_CQL prepared; `run` runs
    statements concurrently at the write level (the store's _run)."""

    def __init__(self, ps: dict, run: Run):
        self._ps = ps
        self._run = run
        self._groups: OrderedDict[tuple[str, int], Group] = OrderedDict()

    def prepare(self, pages: Sequence[PageRows]) -> tuple[list[tuple], list[tuple]]:
        """(bodies, pointers) for every page: the statements to run before the revision rows (blobs,
        groups) and with them (sha1 index and revision_text rows, which must never point at a missing
        blob). The reads this needs run concurrently for all the pages."""
        texts = [(page, _with_text(page.revisions)) for page in pages]
        texts = [(page, revisions) for page, revisions in texts if revisions]
        if not texts:
            return [], []
        known = self._known([(page, revisions) for page, revisions in texts])
        groups = self._current_groups([page for page, _ in texts])
        bodies: list[tuple] = []
        pointers: list[tuple] = []
        for (page, revisions), stored, group in zip(texts, known, groups):
            plan = plan_texts([TextInput(r.rev_id, r.content) for r in revisions if r.content is not None],
                              stored, group)
            self._remember(page.wiki, page.page_id, plan.group)
            bodies += self._bodies(page.wiki, page.page_id, plan)
            pointers += self._pointers(page.wiki, page.page_id, plan, revisions)
        return bodies, pointers

    def forget(self, pages: Sequence[PageRows]) -> None:
        """A failed write or a rebuilt group: read these pages' groups from storage next time."""
        for page in pages:
            self.forget_page(page.wiki, page.page_id)

    def forget_page(self, wiki: str, page_id: int) -> None:
        self._groups.pop((wiki, page_id), None)

    def _known(self, texts: list[tuple[PageRows, list[Revision]]]) -> list[dict[str, tuple[int, int]]]:
        """Per page, the digests of its texts already stored: sha1 -> (grp, blob)."""
        queries, owner = [], []
        for i, (page, revisions) in enumerate(texts):
            digests = sorted({digest(r.content) for r in revisions if r.content is not None})
            for chunk in chunks(digests, _IN_LIMIT):
                queries.append((self._ps["text_known"], (page.wiki, page.page_id, chunk)))
                owner.append(i)
        known: list[dict[str, tuple[int, int]]] = [{} for _ in texts]
        for i, rows in zip(owner, self._run(queries)):
            known[i].update((row.sha1, (row.grp, row.blob)) for row in rows)
        return known

    def _current_groups(self, pages: list[PageRows]) -> list[Group | None]:
        """Per page, the group its next new text goes to: remembered, else read (newest group id, then
        that group's rows), concurrently for the pages not remembered."""
        groups: list[Group | None] = []
        for page in pages:
            cached = self._groups.get((page.wiki, page.page_id))
            if cached is not None:
                self._groups.move_to_end((page.wiki, page.page_id))
            groups.append(cached)
        unknown = [i for i, group in enumerate(groups) if group is None]
        newest = self._run([(self._ps["text_newest_group"], (pages[i].wiki, pages[i].page_id)) for i in unknown])
        found = [(i, row.grp) for i, row in ((i, rows.one()) for i, rows in zip(unknown, newest)) if row is not None]
        members = self._run([(self._ps["text_group_rows"], (pages[i].wiki, pages[i].page_id, grp))
                             for i, grp in found])
        for (i, grp), rows in zip(found, members):
            groups[i] = _group_of(grp, list(rows))
        return groups

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


def _with_text(revisions: Sequence[Revision]) -> list[Revision]:
    """The revisions that carry a text, oldest first (the order plan_texts takes)."""
    return sorted((r for r in revisions if r.content is not None), key=lambda r: (r.timestamp, r.rev_id))


def _group_of(grp: int, rows: list) -> Group | None:
    """A stored group from its rows; None when revision deletion emptied it (the next text opens a group)."""
    dictionary = next((row for row in rows if row.blob == DICTIONARY_BLOB and row.body), None)
    if dictionary is None:
        return None
    return Group.from_dictionary(grp, dictionary.body, sum(1 for row in rows if row.blob and row.body),
                                 dictionary.base)


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


def remove_page_texts(ps: dict, run: Run, wiki: str, page_id: int) -> int:
    """Remove every stored text of a page (page deletion): the revisions' pointers first, so none leads to a
    missing blob, then the groups' partitions, digests and list. Returns how many revisions had a text."""
    groups = [row.grp for row in run([(ps["text_page_groups"], (wiki, page_id))])[0]]
    found = run([(ps["text_group_revs"], (wiki, page_id, grp)) for grp in groups])
    revs = sorted({rev for rows in found for row in rows for rev in (row.revs or ())})
    run([(ps["text_drop_pointer"], (wiki, rev)) for rev in revs])
    run([(ps["text_drop_partition"], (wiki, page_id, grp)) for grp in groups]
        + [(ps["text_drop_page_sha1"], (wiki, page_id)), (ps["text_drop_page_groups"], (wiki, page_id))])
    return len(revs)
