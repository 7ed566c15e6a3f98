"""RevisionStore on Cassandra (tables in cassandra/schema.cql): prepared, idempotent statements run
concurrently at LOCAL_QUORUM; a page's latest pointer is written only after all its rows."""
import logging
import struct
import threading
from collections import OrderedDict
from datetime import datetime
from typing import Iterable, Iterator, Sequence

from cassandra import ConsistencyLevel, DriverException, ProtocolVersion
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable, Session
from cassandra.concurrent import execute_concurrent
from cassandra.connection import ConnectionException
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

from shared.revisions.cql_batches import batched, unlogged
from shared.revisions.derived import (
    CONTENT_CODEC, EARLIEST, LATEST, compress_text, day_of, day_shard, decompress_text, missing_parents,
    month_of, newest, one_page, pointer_timestamp_us, size_deltas, utc)
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
    "by_id": "INSERT INTO {ks}.revisions_by_id (wiki, rev_id, page_id, rev_ts, size) VALUES (?, ?, ?, ?, ?)",
    "by_user": "INSERT INTO {ks}.revisions_by_user (wiki, user_text, month, rev_ts, rev_id, user_id, anon, "
               "page_id, ns, title, minor, size, size_delta, comment, tags) "
               "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "by_day": "INSERT INTO {ks}.revisions_by_day (wiki, day, shard, rev_ts, rev_id, page_id, ns, title, "
              "user_text, anon, minor, size, size_delta, tags) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "by_tag": "INSERT INTO {ks}.revisions_by_tag (wiki, tag, month, rev_ts, rev_id, page_id, title, "
              "user_text, anon, size, size_delta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "content": "INSERT INTO {ks}.revision_content (wiki, rev_id, page_id, content_model, codec, body, sha1) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)",
    "title": "INSERT INTO {ks}.pages_by_title (wiki, title, page_id, ns) VALUES (?, ?, ?, ?) "
             "USING TIMESTAMP ?",
    "parent_size": "SELECT size FROM {ks}.revisions_by_id WHERE wiki = ? AND rev_id = ?",
    "count_month": "SELECT COUNT(*) FROM {ks}.revisions_by_page WHERE wiki = ? AND page_id = ? AND month = ?",
    "page_month": "INSERT INTO {ks}.page_months (wiki, page_id, month, revisions) VALUES (?, ?, ?, ?)",
    "months": "SELECT month, revisions FROM {ks}.page_months WHERE wiki = ? AND page_id = ?",
    "page_stats": "UPDATE {ks}.pages SET first_month = ?, revisions = ? WHERE wiki = ? AND page_id = ?",
    "page_latest": "UPDATE {ks}.pages USING TIMESTAMP ? SET ns = ?, title = ?, latest_rev_id = ?, "
                   "latest_rev_ts = ?, latest_size = ? WHERE wiki = ? AND page_id = ?",
    "page": "SELECT title, latest_rev_id, latest_rev_ts, revisions FROM {ks}.pages "
            "WHERE wiki = ? AND page_id = ?",
    "history": "SELECT " + _REVISION_COLUMNS + " FROM {ks}.revisions_by_page "
               "WHERE wiki = ? AND page_id = ? AND month = ? AND rev_ts >= ? AND rev_ts <= ?",
    "get_content": "SELECT codec, body FROM {ks}.revision_content WHERE wiki = ? AND rev_id = ?",
    "all_pages": "SELECT DISTINCT wiki, page_id FROM {ks}.page_months",
    "page_id": "SELECT page_id FROM {ks}.pages_by_title WHERE wiki = ? AND title = ?",
}


def cluster_for(hosts: Sequence[str], port: int = 9042, *, local_dc: str | None = None,
                schema_event_refresh_window: float = 2.0, request_timeout: float = 20.0) -> Cluster:
    """A Cluster whose default profile is token-aware, local-DC and LOCAL_QUORUM (reads and writes,
    so RF 3 reads its own writes). A short schema_event_refresh_window suits tests that create
    keyspaces; the driver's 2 s debounce suits production."""
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=local_dc or "")),
        consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
        request_timeout=request_timeout,
    )
    # protocol v5 (Cassandra >= 4.0) pinned: negotiating down from the driver's DSE versions costs two
    # failed handshakes and a warning per connection
    return Cluster(list(hosts), port=port, protocol_version=ProtocolVersion.V5,
                   execution_profiles={EXEC_PROFILE_DEFAULT: profile},
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
            # every write is an upsert of the same cells, so retries and speculative runs are safe
            statement.is_idempotent = True
            self._ps[name] = statement

    # -- writing -------------------------------------------------------------------------------

    def write(self, revisions: Sequence[Revision]) -> None:
        if not revisions:
            return
        wiki, page_id = one_page(revisions)
        try:
            self._write(wiki, page_id, revisions)
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"writing {len(revisions)} revisions of {wiki} page {page_id} failed: {exc}") \
                from exc

    def _write(self, wiki: str, page_id: int, revisions: Sequence[Revision]) -> None:
        ps = self._ps
        deltas = size_deltas(revisions, self._parent_sizes(wiki, missing_parents(revisions)))
        latest = newest(revisions)
        latest_us = pointer_timestamp_us(latest)

        rows = [(ps["title"], (wiki, latest.title, page_id, latest.ns, latest_us))]
        for r in revisions:
            rows += self._row_statements(r, deltas[r.rev_id])
        try:
            requests = batched(rows, self._replicas)
        except (TypeError, ValueError, struct.error) as exc:    # a value or key the driver cannot serialize
            raise StoreError(f"revisions of {wiki} page {page_id} cannot be stored: {exc}") from exc
        self._run(requests)

        # Revision rows are durable: count the months they fell in (the other months' counts are
        # read meanwhile), then write the counts, the page's totals and, last, the pointer that
        # resume_point() reads. page_months and pages share the partition key (wiki, page_id), so
        # that batch is one mutation, applied as a whole: counts and pointer land together.
        months = sorted({month_of(r.timestamp) for r in revisions})
        *counts, stored = self._run([(ps["count_month"], (wiki, page_id, m)) for m in months]
                                    + [(ps["months"], (wiki, page_id))])
        per_month = {row.month: row.revisions for row in stored}
        per_month.update((m, rows.one()[0]) for m, rows in zip(months, counts))
        commit = [(ps["page_month"], (wiki, page_id, m, per_month[m])) for m in months]
        commit += [(ps["page_stats"], (min(per_month), sum(per_month.values()), wiki, page_id)),
                   (ps["page_latest"], (latest_us, latest.ns, latest.title, latest.rev_id,
                                        utc(latest.timestamp), latest.size, wiki, page_id))]
        self._session.execute(unlogged(commit))
        self._remember_size(wiki, latest)

    def _parent_sizes(self, wiki: str, parents: set[int]) -> dict[int, int]:
        """Sizes of parent revisions stored by earlier writes: remembered for each page's newest
        revision (the next batch's first parent), else read from revisions_by_id."""
        sizes, unknown = {}, []
        with self._sizes_lock:
            for parent in sorted(parents):
                size = self._sizes.pop((wiki, parent), None)      # its page's next write remembers anew
                if size is None:
                    unknown.append(parent)
                else:
                    sizes[parent] = size
        for parent, rows in zip(unknown, self._run([(self._ps["parent_size"], (wiki, p)) for p in unknown])):
            row = rows.one()
            if row is not None:
                sizes[parent] = row.size
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
            (ps["by_id"], (r.wiki, r.rev_id, r.page_id, ts, r.size)),
            (ps["by_day"], (r.wiki, day_of(ts), day_shard(r.rev_id), ts, r.rev_id, r.page_id, r.ns, r.title,
                            r.user, r.anon, r.minor, r.size, delta, tags)),
        ]
        if r.user is not None:
            out.append((ps["by_user"], (r.wiki, r.user, month, ts, r.rev_id, r.user_id, r.anon, r.page_id,
                                        r.ns, r.title, r.minor, r.size, delta, r.comment, tags)))
        out += [(ps["by_tag"], (r.wiki, tag, month, ts, r.rev_id, r.page_id, r.title, r.user, r.anon, r.size,
                                delta)) for tag in sorted(tags)]
        if r.content is not None:
            out.append((ps["content"], (r.wiki, r.rev_id, r.page_id, r.content_model, CONTENT_CODEC,
                                        compress_text(r.content), r.sha1)))
        return out

    def _replicas(self, routing_key: bytes) -> tuple | None:
        """The replica set owning a partition, from the driver's token map; None when unknown."""
        hosts = self._session.cluster.metadata.get_replicas(self._keyspace, routing_key)
        return tuple(hosts) if hosts else None

    def _run(self, statements: list[tuple]) -> list:
        """Run concurrently; every statement is attempted, then the first failure is raised. Failures
        include client-side ones (a value the driver cannot serialize), not only driver errors."""
        if not statements:
            return []
        results = execute_concurrent(self._session, statements, concurrency=self._concurrency,
                                     raise_on_first_error=False)
        failures = [r.result_or_exc for r in results if not r.success]
        if failures:
            logger.warning("cassandra.statements_failed",
                           extra={"failed": len(failures), "total": len(statements)})
            raise StoreError(f"{len(failures)} of {len(statements)} statements failed: {failures[0]!r}") \
                from failures[0]
        return [r.result_or_exc for r in results]

    # -- reading -------------------------------------------------------------------------------

    def resume_point(self, wiki: str, page_id: int) -> ResumePoint | None:
        state = self.page(wiki, page_id)
        return None if state is None else ResumePoint(state.latest_rev_id, state.latest_timestamp)

    def page(self, wiki: str, page_id: int) -> PageState | None:
        row = self._read(self._ps["page"], (wiki, page_id)).one()
        if row is None or row.latest_rev_id is None:
            return None
        return PageState(wiki, page_id, row.title, row.latest_rev_id, utc(row.latest_rev_ts),
                         row.revisions or 0)

    def history(self, wiki: str, page_id: int, *, since: datetime | None = None,
                until: datetime | None = None) -> Iterator[Revision]:
        lo, hi = utc(since or EARLIEST), utc(until or LATEST)
        months = sorted((row.month for row in self._read(self._ps["months"], (wiki, page_id))), reverse=True)
        for month in months:
            if month_of(lo) <= month <= month_of(hi):
                for row in self._read(self._ps["history"], (wiki, page_id, month, lo, hi)):
                    yield _revision(wiki, page_id, row)

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
        row = self._read(self._ps["get_content"], (wiki, rev_id)).one()
        return None if row is None else decompress_text(row.codec, row.body)

    def _read(self, statement, params):
        try:
            return self._session.execute(statement, params)
        except _DRIVER_ERRORS as exc:
            raise StoreError(f"read failed: {exc}") from exc

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
