"""RevisionStore on Cassandra (tables in cassandra/schema.cql): prepared, idempotent statements run
concurrently at a configurable level (LOCAL_QUORUM by default, for writes and reads); a page's latest
pointer is written only after all its rows. Texts are stored history-native (shared/revisions/cql_text.py).
write_pages() takes many pages through the same steps, each step one concurrent round for all of them, and
counts nothing before every row of the call is acknowledged; write() is write_pages() of one page.

The per-month and per-page revision counts are exact with concurrent writers of one page: each cell
is written with USING TIMESTAMP = the count itself, so the largest count wins whatever the order of
arrival. Counts only grow (revision rows are never deleted), and the writer that counts last (each
writer counts at quorum after its own rows are acknowledged at quorum) sees every row, so the largest
count is the true one; the page's total is summed from page_months after the writer's own month
counts are acknowledged, by the same argument."""
import logging
import struct
import threading
from array import array
from collections import Counter, OrderedDict
from datetime import datetime
from typing import Collection, Iterable, Iterator, Mapping, Sequence

from cassandra import ConsistencyLevel, DriverException, ProtocolVersion
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable, Session
from cassandra.concurrent import execute_concurrent
from cassandra.connection import ConnectionException
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

from shared.revisions import census_listing_rows
from shared.revisions.cql_batches import batched
from shared.revisions.cql_in import chunks, cross_chunks
from shared.revisions.cql_text import TEXT_CQL, TextWriter, read_text, remove_page_texts, remove_text
from shared.revisions.derived import (
    EARLIEST, LATEST, PageRows, day_of, day_shard, described, first_month_timestamp, id_block, missing_parents,
    month_of, newest, one_page, page_rows, pointer_timestamp_us, size_deltas, utc)
from shared.revisions.model import PageState, ResumePoint, Revision
from shared.revisions.store import StoreError

logger = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 64
SIZE_CACHE_ENTRIES = 10_000         # pages whose newest size is remembered (~200 bytes each)
_DRIVER_ERRORS = (DriverException, NoHostAvailable, ConnectionException)

_REVISION_COLUMNS = ("rev_ts, rev_id, ns, title, parent_id, user_text, user_id, anon, minor, size, "
                     "size_delta, sha1, comment, tags, content_model, "
                     "user_hidden, comment_hidden, sha1_hidden, text_hidden")

# {ks} is the validated keyspace name; every value is a bind marker.
_CQL = {
    "by_page": "INSERT INTO {ks}.revisions_by_page (wiki, page_id, month, " + _REVISION_COLUMNS + ") "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "by_id": "INSERT INTO {ks}.revisions_by_id_block (wiki, id_block, rev_id, page_id, rev_ts, size) "
             "VALUES (?, ?, ?, ?, ?, ?)",
    "by_user": "INSERT INTO {ks}.revisions_by_user (wiki, user_text, month, rev_ts, rev_id, user_id, anon, "
               "page_id, ns, title, minor, size, size_delta, comment, tags) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "by_day": "INSERT INTO {ks}.revisions_by_day (wiki, day, shard, rev_ts, rev_id, page_id, ns, title, "
              "user_text, anon, minor, size, size_delta, tags) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "by_tag": "INSERT INTO {ks}.revisions_by_tag (wiki, tag, month, rev_ts, rev_id, page_id, title, "
              "user_text, anon, size, size_delta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "title": "INSERT INTO {ks}.pages_by_title (wiki, title, page_id, ns) VALUES (?, ?, ?, ?) "
             "USING TIMESTAMP ?",
    "parent_size": "SELECT size FROM {ks}.revisions_by_id_block WHERE wiki = ? AND id_block = ? AND rev_id = ?",
    # the rows of the months a write touched, of many pages at once (shared/revisions/cql_in.py), counted
    # here: the server warns about an aggregate (COUNT ... GROUP BY) over several partitions, not about
    # reading their keys
    "month_rows": "SELECT page_id, month FROM {ks}.revisions_by_page WHERE wiki = ? AND page_id IN ? AND month IN ?",
    "page_month": "INSERT INTO {ks}.page_months (wiki, page_id, month, revisions) VALUES (?, ?, ?, ?) "
                  "USING TIMESTAMP ?",
    "months": "SELECT month, revisions FROM {ks}.page_months WHERE wiki = ? AND page_id = ?",
    "pages_months": "SELECT page_id, month, revisions FROM {ks}.page_months WHERE wiki = ? AND page_id IN ?",
    "page_total": "UPDATE {ks}.pages USING TIMESTAMP ? SET revisions = ? WHERE wiki = ? AND page_id = ?",
    "page_first": "UPDATE {ks}.pages USING TIMESTAMP ? SET first_month = ? WHERE wiki = ? AND page_id = ?",
    "page_latest": "UPDATE {ks}.pages USING TIMESTAMP ? SET ns = ?, title = ?, latest_rev_id = ?, "
                   "latest_rev_ts = ?, latest_size = ? WHERE wiki = ? AND page_id = ?",
    "page": "SELECT title, latest_rev_id, latest_rev_ts, revisions, deleted FROM {ks}.pages "
            "WHERE wiki = ? AND page_id = ?",
    "page_deleted": "UPDATE {ks}.pages SET deleted = ? WHERE wiki = ? AND page_id = ?",
    "history": "SELECT " + _REVISION_COLUMNS + " FROM {ks}.revisions_by_page "
               "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts >= ? AND rev_ts <= ?",
    # the ids stored up to a time, of many pages' months at once (stored_ids)
    "month_ids": "SELECT page_id, month, rev_id FROM {ks}.revisions_by_page "
                 "WHERE wiki = ? AND page_id IN ? AND month IN ? AND rev_ts <= ?",
    "all_pages": "SELECT DISTINCT wiki, page_id FROM {ks}.page_months",
    "page_id": "SELECT page_id FROM {ks}.pages_by_title WHERE wiki = ? AND title = ?",
    # revision deletion (hide_revision_fields)
    "where": "SELECT page_id, rev_ts FROM {ks}.revisions_by_id_block WHERE wiki = ? AND id_block = ? AND rev_id = ?",
    "row": "SELECT user_text, tags FROM {ks}.revisions_by_page "
           "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts = ? AND rev_id = ?",
    # MediaWiki hides a text's sha1 with it: the digest would tell whether a guess is the hidden text
    "hide_text": "UPDATE {ks}.revisions_by_page SET text_hidden = true, sha1 = null, sha1_hidden = true "
                 "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts = ? AND rev_id = ?",
    "hide_comment": "UPDATE {ks}.revisions_by_page SET comment = null, comment_hidden = true "
                    "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts = ? AND rev_id = ?",
    "hide_user_comment": "UPDATE {ks}.revisions_by_user SET comment = null "
                         "WHERE wiki = ? AND user_text = ? AND month = ? AND rev_ts = ? AND rev_id = ?",
    "hide_user": "UPDATE {ks}.revisions_by_page SET user_text = null, user_id = null, user_hidden = true "
                 "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts = ? AND rev_id = ?",
    "hide_user_row": "DELETE FROM {ks}.revisions_by_user "
                     "WHERE wiki = ? AND user_text = ? AND month = ? AND rev_ts = ? AND rev_id = ?",
    "hide_user_day": "UPDATE {ks}.revisions_by_day SET user_text = null "
                     "WHERE wiki = ? AND day = ? AND shard = ? AND rev_ts = ? AND rev_id = ?",
    "hide_user_tag": "UPDATE {ks}.revisions_by_tag SET user_text = null "
                     "WHERE wiki = ? AND tag = ? AND month = ? AND rev_ts = ? AND rev_id = ?",
    # a census's listing (shared.revisions.census_listing_rows)
    "listing_add": "INSERT INTO {ks}.census_listing (wiki, census, shard, page_id, first_rev, rev_ids) "
                   "VALUES (?, ?, ?, ?, ?, ?)",
    "listing": "SELECT page_id, rev_ids FROM {ks}.census_listing WHERE wiki = ? AND census = ? AND shard = ?",
    "listing_drop": "DELETE FROM {ks}.census_listing WHERE wiki = ? AND census = ? AND shard = ?",
    **TEXT_CQL,
}
READ_PROFILE = "read"


def _id_values(wiki: str, rev_id: int, page_id: int, rev_ts: datetime, size: int) -> tuple:
    """The bind values of a revisions_by_id_block row ("by_id")."""
    return wiki, id_block(rev_id), rev_id, page_id, rev_ts, size


def cluster_for(hosts: Sequence[str], port: int = 9042, *, local_dc: str | None = None,
                schema_event_refresh_window: float = 2.0, request_timeout: float = 20.0,
                write_consistency: str = "LOCAL_QUORUM", read_consistency: str = "LOCAL_QUORUM") -> Cluster:
    """A Cluster whose profiles are token-aware and local-DC: the default one (writes) and READ_PROFILE
    (the store's reads), both LOCAL_QUORUM unless told otherwise, so RF 3 survives one node down and
    reads its own writes. A short schema_event_refresh_window suits tests that create keyspaces; the
    driver's 2 s debounce suits production."""
    def profile(level: str) -> ExecutionProfile:
        return ExecutionProfile(
            load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=local_dc or "")),
            consistency_level=ConsistencyLevel.name_to_value[level],
            serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
            request_timeout=request_timeout,
        )
    # protocol v5 (Cassandra >= 4.0) pinned: negotiating down from the driver's DSE versions costs two
    # failed handshakes and a warning per connection
    return Cluster(list(hosts), port=port, protocol_version=ProtocolVersion.V5,
                   execution_profiles={EXEC_PROFILE_DEFAULT: profile(write_consistency),
                                       READ_PROFILE: profile(read_consistency)},
                   schema_event_refresh_window=schema_event_refresh_window)


def connect(hosts: Sequence[str], port: int, keyspace: str, **cluster_options) -> "CassandraRevisionStore":
    """A store that owns its cluster connection (close() shuts it down). The keyspace must exist:
    apply the schema first (shared.revisions.cql_schema)."""
    cluster = cluster_for(hosts, port, **cluster_options)
    try:
        session = cluster.connect()
        return CassandraRevisionStore(session, keyspace, owns_cluster=True)
    except Exception:
        cluster.shutdown()
        raise


class CassandraRevisionStore:
    def __init__(self, session: Session, keyspace: str, *, concurrency: int = DEFAULT_CONCURRENCY,
                 owns_cluster: bool = False):
        if keyspace not in session.cluster.metadata.keyspaces:
            raise StoreError(f"keyspace {keyspace!r} does not exist; apply cassandra/schema.cql first")
        self._session = session
        self._keyspace = keyspace
        self._concurrency = concurrency
        self._owns_cluster = owns_cluster
        # (wiki, rev_id) -> size of each page's newest written revision, until its next write reads
        # it; a revision's size never changes, so an entry is never stale
        self._sizes: OrderedDict[tuple[str, int], int] = OrderedDict()
        self._sizes_lock = threading.Lock()
        self._ps = {}
        for name, cql in _CQL.items():
            statement = session.prepare(cql.format(ks=keyspace))
            # every write is an upsert of the same cells (a set add or remove of the same element),
            # so retries and speculative runs are safe
            statement.is_idempotent = True
            self._ps[name] = statement
        self._read_profile = READ_PROFILE if READ_PROFILE in session.cluster.profile_manager.profiles \
            else EXEC_PROFILE_DEFAULT
        self._texts = TextWriter(self._ps, self._run)

    # -- writing -------------------------------------------------------------------------------

    def write(self, revisions: Sequence[Revision]) -> None:
        if revisions:
            one_page(revisions)
            self.write_pages([revisions])

    def write_pages(self, pages: Iterable[Sequence[Revision]]) -> None:
        """Several pages in one round of each step: their rows grouped into shared batches, then one
        round of month counts, page totals and pointers for all of them."""
        rows = page_rows(pages)
        if not rows:
            return
        try:
            self._write(rows)
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"writing {described(rows)} failed: {exc}") from exc

    def _write(self, pages: list[PageRows]) -> None:
        ps = self._ps
        stored_sizes = self._parent_sizes({(p.wiki, parent) for p in pages for parent in missing_parents(p.revisions)})
        latest = [newest(p.revisions) for p in pages]
        bodies, pointers = self._texts.prepare(pages)
        rows = []
        for page, last in zip(pages, latest):
            deltas = size_deltas(page.revisions, stored_sizes.get(page.wiki, {}))
            rows.append((ps["title"], (page.wiki, last.title, page.page_id, last.ns, pointer_timestamp_us(last))))
            for r in page.revisions:
                rows += self._row_statements(r, deltas[r.rev_id])
        try:
            text_requests = batched(bodies, self._replicas)
            requests = batched(rows + pointers, self._replicas)
        except (TypeError, ValueError, struct.error) as exc:    # a value or key the driver cannot serialize
            self._texts.forget(pages)
            raise StoreError(f"{described(pages)} cannot be stored: {exc}") from exc
        try:
            self._run(text_requests)            # bodies first: nothing may point at a missing blob
            self._run(requests)
        except StoreError:
            self._texts.forget(pages)
            raise
        self._commit(pages, latest)
        for page, last in zip(pages, latest):
            self._remember_size(page.wiki, last)

    def _commit(self, pages: list[PageRows], latest: list[Revision]) -> None:
        """Every page's revision rows are durable: count the months they fell in and write each count
        with itself as the write timestamp (the largest count wins); once those are acknowledged, read
        every month's count of each page, then write its total (same rule), its first month (the
        smallest wins) and its pointer that resume_point() reads, together (one partition, one
        mutation). Each step is one concurrent round for all the pages, reads naming many partitions."""
        ps = self._ps
        counts = self._month_counts(pages)
        self._run(batched([(ps["page_month"], (wiki, page_id, month, n, n))
                           for (wiki, page_id), months in counts.items() for month, n in months.items()],
                          self._replicas))
        page_ids: dict[str, list[int]] = {}
        for page in pages:
            page_ids.setdefault(page.wiki, []).append(page.page_id)
        stored = self._page_months(page_ids)
        statements = []
        for page, last in zip(pages, latest):
            per_month = stored[(page.wiki, page.page_id)]
            total, first = sum(per_month.values()), min(per_month)
            statements += [
                (ps["page_total"], (total, total, page.wiki, page.page_id)),
                (ps["page_first"], (first_month_timestamp(first), first, page.wiki, page.page_id)),
                (ps["page_latest"], (pointer_timestamp_us(last), last.ns, last.title, last.rev_id,
                                     utc(last.timestamp), last.size, page.wiki, page.page_id))]
        self._run(batched(statements, self._replicas))

    def _month_counts(self, pages: list[PageRows]) -> dict[tuple[str, int], Counter[int]]:
        """(wiki, page_id) -> month -> stored revisions, for the months the pages' revisions fell in."""
        wanted: dict[str, dict[int, set[int]]] = {}
        for page in pages:
            wanted.setdefault(page.wiki, {}).setdefault(page.page_id, set()).update(
                month_of(r.timestamp) for r in page.revisions)
        queries = [(self._ps["month_rows"], (wiki, page_ids, months))
                   for wiki, of_wiki in wanted.items() for page_ids, months in cross_chunks(of_wiki)]
        counts: dict[tuple[str, int], Counter[int]] = {(p.wiki, p.page_id): Counter() for p in pages}
        for (_, (wiki, _, _)), rows in zip(queries, self._run(queries)):
            for row in rows:
                if row.month in wanted[wiki][row.page_id]:      # a cross product names other partitions too
                    counts[(wiki, row.page_id)][row.month] += 1
        return counts

    def _page_months(self, page_ids: Mapping[str, Sequence[int]], execution_profile: object = EXEC_PROFILE_DEFAULT
                     ) -> dict[tuple[str, int], dict[int, int]]:
        """(wiki, page_id) -> month -> the count page_months holds, for every page named ({} for one with none):
        one round of reads naming many partitions each."""
        queries = [(self._ps["pages_months"], (wiki, list(part)))
                   for wiki, ids in page_ids.items() for part in chunks(ids)]
        stored: dict[tuple[str, int], dict[int, int]] = {(wiki, i): {} for wiki, ids in page_ids.items() for i in ids}
        for (_, (wiki, _)), rows in zip(queries, self._run(queries, execution_profile)):
            for row in rows:
                stored[(wiki, row.page_id)][row.month] = row.revisions
        return stored

    def _parent_sizes(self, parents: set[tuple[str, int]]) -> dict[str, dict[int, int]]:
        """wiki -> rev_id -> size of parent revisions stored by earlier writes: remembered for each
        page's newest revision (the next batch's first parent), else read from revisions_by_id_block."""
        sizes: dict[str, dict[int, int]] = {}
        unknown = []
        with self._sizes_lock:
            for wiki, parent in sorted(parents):
                size = self._sizes.pop((wiki, parent), None)      # its page's next write remembers anew
                if size is None:
                    unknown.append((wiki, parent))
                else:
                    sizes.setdefault(wiki, {})[parent] = size
        reads = [(self._ps["parent_size"], (wiki, id_block(parent), parent)) for wiki, parent in unknown]
        for (wiki, parent), rows in zip(unknown, self._run(reads)):
            row = rows.one()
            if row is not None:
                sizes.setdefault(wiki, {})[parent] = row.size
        return sizes

    def _remember_size(self, wiki: str, latest: Revision) -> None:
        with self._sizes_lock:
            if len(self._sizes) >= SIZE_CACHE_ENTRIES:
                self._sizes.popitem(last=False)
            self._sizes[(wiki, latest.rev_id)] = latest.size

    def _row_statements(self, r: Revision, delta: int | None) -> list[tuple]:
        ps, ts, month, tags = self._ps, utc(r.timestamp), month_of(r.timestamp), frozenset(r.tags)
        out = [
            (ps["by_page"], (r.wiki, r.page_id, month, ts, r.rev_id, r.ns, r.title, r.parent_id, r.user,
                             r.user_id, r.anon, r.minor, r.size, delta, r.sha1, r.comment, tags,
                             r.content_model, r.user_hidden, r.comment_hidden, r.sha1_hidden, r.text_hidden)),
            (ps["by_id"], _id_values(r.wiki, r.rev_id, r.page_id, ts, r.size)),
            (ps["by_day"], (r.wiki, day_of(ts), day_shard(r.rev_id), ts, r.rev_id, r.page_id, r.ns, r.title,
                            r.user, r.anon, r.minor, r.size, delta, tags)),
        ]
        if r.user is not None:
            out.append((ps["by_user"], (r.wiki, r.user, month, ts, r.rev_id, r.user_id, r.anon, r.page_id,
                                        r.ns, r.title, r.minor, r.size, delta, r.comment, tags)))
        out += [(ps["by_tag"], (r.wiki, tag, month, ts, r.rev_id, r.page_id, r.title, r.user, r.anon, r.size,
                                delta)) for tag in sorted(tags)]
        return out

    def copy_ids(self, rows: Sequence[tuple[str, int, int, datetime, int]]) -> int:
        """Write (wiki, rev_id, page_id, rev_ts, size) rows into revisions_by_id_block, batched by block as every
        write is (a keyspace's legacy revisions_by_id: shared.revisions.cql_schema.copy_legacy_ids); how many."""
        self._run(batched([(self._ps["by_id"], _id_values(*row)) for row in rows], self._replicas))
        return len(rows)

    def _replicas(self, routing_key: bytes) -> tuple | None:
        """The replica set owning a partition, from the driver's token map; None when unknown."""
        hosts = self._session.cluster.metadata.get_replicas(self._keyspace, routing_key)
        return tuple(hosts) if hosts else None

    def _run(self, statements: list[tuple], execution_profile: object = EXEC_PROFILE_DEFAULT) -> list:
        """Run concurrently; every statement is attempted, then the first failure is raised. Failures
        include client-side ones (a value the driver cannot serialize), not only driver errors."""
        if not statements:
            return []
        results = execute_concurrent(self._session, statements, concurrency=self._concurrency,
                                     raise_on_first_error=False, execution_profile=execution_profile)
        failures = [r.result_or_exc for r in results if not r.success]
        if failures:
            logger.warning("cassandra.statements_failed",
                           extra={"failed": len(failures), "total": len(statements)})
            raise StoreError(f"{len(failures)} of {len(statements)} statements failed: {failures[0]!r}") \
                from failures[0]
        return [r.result_or_exc for r in results]

    def mark_deleted(self, wiki: str, page_id: int) -> bool:
        """The texts go first and the flag last: a failure leaves the page unmarked, to be marked again."""
        if self.page(wiki, page_id) is None:
            return False
        removed = remove_page_texts(self._ps, self._run, wiki, page_id)
        self._texts.forget_page(wiki, page_id)
        self._run([(self._ps["page_deleted"], (True, wiki, page_id))])
        logger.info("cassandra.page_deleted", extra={"wiki": wiki, "page_id": page_id, "texts": removed})
        return True

    def mark_restored(self, wiki: str, page_id: int) -> None:
        self._run([(self._ps["page_deleted"], (False, wiki, page_id))])

    # -- reading -------------------------------------------------------------------------------

    def resume_point(self, wiki: str, page_id: int) -> ResumePoint | None:
        state = self.page(wiki, page_id)
        return None if state is None else ResumePoint(state.latest_rev_id, state.latest_timestamp)

    def page(self, wiki: str, page_id: int) -> PageState | None:
        row = self._read(self._ps["page"], (wiki, page_id)).one()
        if row is None or row.latest_rev_id is None:
            return None
        return PageState(wiki, page_id, row.title, row.latest_rev_id, utc(row.latest_rev_ts),
                         row.revisions or 0, bool(row.deleted))

    def history(self, wiki: str, page_id: int, *, since: datetime | None = None,
                until: datetime | None = None) -> Iterator[Revision]:
        lo, hi = utc(since or EARLIEST), utc(until or LATEST)
        months = sorted((row.month for row in self._read(self._ps["months"], (wiki, page_id))), reverse=True)
        for month in months:
            if month_of(lo) <= month <= month_of(hi):
                for row in self._read(self._ps["history"], (wiki, page_id, month, lo, hi)):
                    yield _revision(wiki, page_id, row)

    def stored_ids(self, wiki: str, page_ids: Collection[int], until: datetime) -> dict[int, list[int]]:
        """Two rounds of reads naming many partitions each: the pages' months, then the ids of every month
        up to `until`'s."""
        out: dict[int, list[int]] = {page_id: [] for page_id in page_ids}
        hi = utc(until)
        last = month_of(hi)
        try:
            stored = self._page_months({wiki: sorted(out)}, self._read_profile)
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"read failed: {exc}") from exc
        months = {page_id: wanted for (_, page_id), per_month in stored.items()
                  if (wanted := {month for month in per_month if month <= last})}
        reads = [(self._ps["month_ids"], (wiki, keys, subkeys, hi)) for keys, subkeys in cross_chunks(months)]
        for rows in self._read_many(reads):
            for row in rows:
                if row.month in months[row.page_id]:        # a cross product names other partitions too
                    out[row.page_id].append(row.rev_id)
        return out

    def _read_many(self, reads: list[tuple]) -> list:
        try:
            return self._run(reads, execution_profile=self._read_profile)
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"read failed: {exc}") from exc

    def revisions(self, wiki: str | None = None) -> Iterable[Revision]:
        pages = [(row.wiki, row.page_id) for row in self._read(self._ps["all_pages"], ())
                 if wiki is None or row.wiki == wiki]
        for page_wiki, page_id in pages:
            yield from self.history(page_wiki, page_id)

    def page_id(self, wiki: str, title: str) -> int | None:
        row = self._read(self._ps["page_id"], (wiki, title)).one()
        return None if row is None else row.page_id

    def wikis(self) -> list[str]:
        return sorted({row.wiki for row in self._read(self._ps["all_pages"], ())})

    def content(self, wiki: str, rev_id: int) -> str | None:
        """Two single-partition reads: the revision's text row, then its group's dictionary and blob."""
        return read_text(self._ps, self._read, wiki, rev_id)

    # -- a census's listing --------------------------------------------------------------------

    def add_listing(self, wiki: str, census: str, shard: int, pages: Mapping[int, Sequence[int]]) -> None:
        statements = [(self._ps["listing_add"], (wiki, census, shard, page_id, ids[0], census_listing_rows.pack(ids)))
                      for page_id, ids in pages.items() if ids]
        try:
            self._run(batched(statements, self._replicas))
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"writing census {census} shard {shard} failed: {exc}") from exc

    def listing(self, wiki: str, census: str, shard: int) -> dict[int, array]:
        return census_listing_rows.gathered((row.page_id, row.rev_ids)
                                            for row in self._read(self._ps["listing"], (wiki, census, shard)))

    def drop_listing(self, wiki: str, census: str, shards: int) -> None:
        try:
            self._run([(self._ps["listing_drop"], (wiki, census, shard)) for shard in range(shards)])
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"removing census {census} failed: {exc}") from exc

    def _read(self, statement, params):
        try:
            return self._session.execute(statement, params, execution_profile=self._read_profile)
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"read failed: {exc}") from exc

    # -- revision deletion ---------------------------------------------------------------------

    def hide_revision_fields(self, wiki: str, rev_id: int, *, text: bool = False, comment: bool = False,
                             user: bool = False) -> bool:
        """Remove what revision deletion hides from every table that holds it: the text (its blob too,
        once no other revision has that text), the comment, the user (the revision leaves its user's
        partition). False when the revision is not stored."""
        try:
            return self._hide(wiki, rev_id, text, comment, user)
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"hiding fields of {wiki} revision {rev_id} failed: {exc}") from exc

    def _hide(self, wiki: str, rev_id: int, text: bool, comment: bool, user: bool) -> bool:
        ps = self._ps
        where = self._run([(ps["where"], (wiki, id_block(rev_id), rev_id))])[0].one()
        if where is None:
            return False
        ts = utc(where.rev_ts)
        key = (wiki, where.page_id, month_of(ts), ts, rev_id)
        row = self._run([(ps["row"], key)])[0].one()
        if row is None:
            return False
        statements = []
        if text:
            remove_text(ps, self._run, self._session.execute, wiki, rev_id)
            self._texts.forget_page(wiki, where.page_id)     # its group may have been rebuilt around another text
            statements.append((ps["hide_text"], key))
        if comment:
            statements.append((ps["hide_comment"], key))
            if row.user_text is not None and not user:
                statements.append((ps["hide_user_comment"], (wiki, row.user_text, month_of(ts), ts, rev_id)))
        if user and row.user_text is not None:
            statements += [(ps["hide_user"], key),
                           (ps["hide_user_row"], (wiki, row.user_text, month_of(ts), ts, rev_id)),
                           (ps["hide_user_day"], (wiki, day_of(ts), day_shard(rev_id), ts, rev_id))]
            statements += [(ps["hide_user_tag"], (wiki, tag, month_of(ts), ts, rev_id))
                           for tag in sorted(row.tags or ())]
        self._run(statements)
        return True

    def close(self) -> None:
        if self._owns_cluster:
            self._session.cluster.shutdown()


def _revision(wiki: str, page_id: int, row) -> Revision:
    return Revision(
        wiki=wiki, page_id=page_id, ns=row.ns, title=row.title, rev_id=row.rev_id, parent_id=row.parent_id,
        timestamp=utc(row.rev_ts), user=row.user_text, user_id=row.user_id, anon=bool(row.anon),
        minor=bool(row.minor), size=row.size, sha1=row.sha1, comment=row.comment,
        tags=tuple(sorted(row.tags or ())), content_model=row.content_model,
        user_hidden=bool(row.user_hidden), comment_hidden=bool(row.comment_hidden),
        sha1_hidden=bool(row.sha1_hidden), text_hidden=bool(row.text_hidden),
    )
