"""Stream MediaWiki XML dumps (one or many files; http(s) or local; plain, gzip or bzip2) into the revision store,
writing the rows the API path writes. The XML walk is mwxml's (spawn.dump_parse), in this process or, given a
session factory, in a child process beside the writing.

Pages are written many at a time (RevisionStore.write_pages: one round of requests for a whole group of small
pages, where a page at a time costs several round trips each).

Several files are read at once (`files_at_once`; the spawn's own limit is BW_DUMP_FILES_PER_NODE): each walk keeps a
core busy, and a second file's rows keep the writing busy while the first starts, ends or parses a long page. They
start in order; after a file fails no other starts, the ones reading go on to their end, and the first failure (in
file order) is raised.

Resume: after pages are written, a JSON checkpoint (atomically replaced) records per file whether it is done,
how many pages of it are fully written and the id of the last one, and, inside a long page (handed over in parts:
spawn.dump_parse), how many of its revisions are. A restart re-reads the file from its start, skips that many
pages (checking the last id matches) and revisions and writes on; what was written after the last checkpoint is
written again, which changes nothing because the store's writes are idempotent by (wiki, rev_id).

    .venv/bin/python -m spawn.dump_ingest --wiki ch.wikipedia.org --checkpoint state.json \\
        --sqlite revisions.db https://.../chwiki-...-pages-meta-history1.xml.bz2 ...
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, cast

from shared.config import DUMP_FILES_PER_NODE
from shared.revisions.model import Revision
from shared.revisions.store import RevisionStore
from spawn.dump_parse import PART, Parsed, WalkSpec, walk_here, walk_in_child
from spawn.dump_rows import DumpError, ExpectedSite
from spawn.dump_stream import Session

BATCH = PART                # revisions per store.write_pages(); a longer page history is handed over in parts
CHECKPOINT_EVERY = 1.0      # seconds between checkpoint files; a crash re-writes at most this much
WRITERS = 1                 # groups of pages written at once, while the main thread parses the next
FILES_AT_ONCE = 1           # files read at once by a DumpIngest made in code; the command line reads the spawn's


@dataclass
class FileProgress:
    source: str
    state: str = "pending"          # pending | reading | done | stopped | failed
    bytes_total: int | None = None  # compressed size (Content-Length), when known
    bytes_read: int = 0             # compressed bytes read in this run
    revisions_read: int = 0
    revisions_written: int = 0
    pages_written: int = 0
    error: str | None = None


@dataclass
class DumpProgress:
    """Plain figures a caller can read at any time from another thread (for /metrics, the dashboard)."""
    files: list[FileProgress]
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None

    def totals(self) -> dict[str, Any]:
        elapsed = max((self.finished or time.monotonic()) - self.started, 1e-9)
        read = sum(f.bytes_read for f in self.files)
        known = [f for f in self.files if f.bytes_total is not None]
        left = sum(max(f.bytes_total - f.bytes_read, 0) for f in known if f.state != "done")  # type: ignore
        written = sum(f.revisions_written for f in self.files)
        byte_rate = read / elapsed
        return {
            "bytes_read": read, "bytes_total": sum(f.bytes_total or 0 for f in known) if known else None,
            "revisions_read": sum(f.revisions_read for f in self.files), "revisions_written": written,
            "revisions_per_s": written / elapsed, "bytes_per_s": byte_rate,
            "eta_s": eta(left, byte_rate) if len(known) == len(self.files) else None,
            "files_done": sum(f.state == "done" for f in self.files), "files": len(self.files),
            "failed": [f.source for f in self.files if f.state == "failed"],
        }

    def snapshot(self) -> dict[str, Any]:
        return {"total": self.totals(), "files": [asdict(f) for f in self.files]}


def eta(bytes_left: int, bytes_per_s: float) -> float | None:
    """Seconds left at the current compressed-byte rate, or None before any byte arrived."""
    if bytes_per_s <= 0:
        return None
    return bytes_left / bytes_per_s


@dataclass
class FileCheckpoint:
    done: bool = False
    pages: int = 0                  # pages of the file fully written, in dump order
    last_page_id: int | None = None
    revisions: int = 0              # revisions written (0 in checkpoints written before it was kept)
    part_page_id: int | None = None     # a long page partly written after those pages ...
    part_revisions: int = 0             # ... and how many of its revisions are


class Checkpoint:
    """Per-file resume state in one JSON file, replaced atomically (write, fsync, rename); with no path, in memory
    only, seeded with `files` (a bootstrap through the hub: the hub keeps the resume point, spawn.dump_duties)."""

    def __init__(self, path: str | os.PathLike[str] | None, files: Mapping[str, FileCheckpoint] | None = None):
        self.path = None if path is None else Path(path)
        self.files: dict[str, FileCheckpoint] = dict(files or {})
        if self.path is not None and self.path.exists():
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            self.files = {k: FileCheckpoint(**v) for k, v in raw.get("files", {}).items()}

    def of(self, source: str) -> FileCheckpoint:
        return self.files.setdefault(source, FileCheckpoint())

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"files": {k: asdict(v) for k, v in self.files.items()}}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def checkpoint_path(data_dir: str | os.PathLike[str], name: str) -> Path:
    """Where a spawn keeps the checkpoint of one bootstrap `name` (e.g. the subscription id)."""
    return Path(data_dir) / "dumps" / f"{name}.json"


class DumpIngest:
    """Ingest `sources` in order into `store` under the wiki key `wiki`. run() raises the first file's DumpError
    after checkpointing what was written; a later run() resumes."""

    def __init__(self, sources: Sequence[str], *, wiki: str, store: RevisionStore, checkpoint: Checkpoint,
                 http: Session | None = None, expected: ExpectedSite = ExpectedSite(), content: bool = False,
                 timeout: tuple[float, float] = (10.0, 60.0), batch: int = BATCH,
                 checkpoint_every: float = CHECKPOINT_EVERY, writers: int = WRITERS,
                 stop: threading.Event | None = None, namespaces: Iterable[int] | None = None,
                 page_ids: Iterable[int] | None = None, session_factory: Callable[[], Session] | None = None,
                 files_at_once: int = FILES_AT_ONCE):
        if http is None and session_factory is None:
            raise ValueError("a dump ingest needs a session to walk in this process or a factory for child ones")
        if files_at_once < 1:
            raise ValueError("files_at_once must be at least 1")
        self.files_at_once = files_at_once
        self.wiki, self.store, self.checkpoint, self.http = wiki, store, checkpoint, http
        self.expected, self.content, self.timeout = expected, content, timeout
        self.batch, self.checkpoint_every, self.writers = batch, checkpoint_every, writers
        self.stop = stop or threading.Event()
        # only the pages of these namespaces are written (a `namespace` set); None: every page
        self.namespaces = None if namespaces is None else frozenset(namespaces)
        # only these pages are written (a `category` set's members); None: every page
        self.page_ids = None if page_ids is None else frozenset(page_ids)
        # given: each file is walked in a child process that opens it with a session of its own (spawn.dump_parse);
        # None: walked here, with `http`
        self.session_factory = session_factory
        self.progress = DumpProgress([FileProgress(s) for s in sources])
        # held while a file's resume point and written counts move together (figures() reads them on another thread)
        # and while the checkpoint is saved (files read at once save it from their own threads)
        self._figures = threading.Lock()

    def figures(self, index: int = 0) -> tuple[FileCheckpoint, FileProgress]:
        """Copies of the `index`th file's checkpoint and progress, consistent with each other (a resume point whose
        last page id lags its page count would refuse the file on resume). Safe from any thread."""
        fp = self.progress.files[index]
        with self._figures:
            return replace(self.checkpoint.of(fp.source)), replace(fp)

    def run(self) -> bool:
        """True when every file is done; False when stopped early."""
        try:
            todo = []
            for fp in self.progress.files:
                if self.checkpoint.of(fp.source).done:
                    fp.state = "done"
                else:
                    todo.append(fp)
            self._files(todo)
            return all(f.state == "done" for f in self.progress.files)
        finally:
            self.progress.finished = time.monotonic()

    def _files(self, todo: list[FileProgress]) -> None:
        """The files on `files_at_once` threads (one: one after the other), started in order; none starts after one
        failed or a stop. The first failure in file order is raised once every started file ended."""
        failed = threading.Event()

        def one(fp: FileProgress) -> None:
            if self.stop.is_set() or failed.is_set():
                return                          # not started: stays pending, for the next run
            try:
                self._file(fp)
            except BaseException:
                failed.set()
                raise
        pool = ThreadPoolExecutor(self.files_at_once, thread_name_prefix="dump-file")
        try:
            futures = [pool.submit(one, fp) for fp in todo]
            wait(futures)
        except BaseException:
            # interrupted here (Ctrl-C): the files being read stop at their next page, checkpointed, before it goes on
            self.stop.set()
            raise
        finally:
            pool.shutdown(wait=True)
        for future in futures:
            error = future.exception()
            if error is not None:
                raise error

    def _save(self) -> None:
        with self._figures:
            self.checkpoint.save()

    def _file(self, fp: FileProgress) -> None:
        cp = self.checkpoint.of(fp.source)
        fp.state, fp.error = "reading", None

        def counted(n: int) -> None:
            fp.bytes_read += n
        spec = WalkSpec(fp.source, self.wiki, self.expected, self.content, self.timeout, cp.pages, cp.last_page_id,
                        self.namespaces, self.page_ids, self.batch, cp.part_page_id, cp.part_revisions)
        walker = (walk_in_child(spec, self.session_factory, counted) if self.session_factory is not None
                  else walk_here(spec, cast(Session, self.http), counted))
        try:
            with walker as (total, pages):
                fp.bytes_total = total
                complete = self._pages(fp, cp, pages)
        except DumpError as exc:
            fp.state, fp.error = "failed", f"{exc.__class__.__name__}: {exc}"
            self._save()
            raise
        except BaseException:
            self._save()
            raise
        with self._figures:
            cp.done = complete
        fp.state = "done" if complete else "stopped"
        self._save()

    def _pages(self, fp: FileProgress, cp: FileCheckpoint, pages: Iterator[Parsed]) -> bool:
        """Take the walk's pages here, write groups of them on `writers` threads (a long page's parts one after the
        other); the checkpoint advances only over the leading run of groups whose writes completed."""
        pending: deque[InFlight] = deque()
        with ThreadPoolExecutor(self.writers, thread_name_prefix="dump-write") as pool:
            try:
                complete = self._submit(fp, cp, pages, pool, pending)
            except BaseException:
                self._settle(fp, cp, pending, until=0, quiet=True)
                raise
            self._settle(fp, cp, pending, until=0)
        return complete

    def _submit(self, fp: FileProgress, cp: FileCheckpoint, pages: Iterator[Parsed], pool: ThreadPoolExecutor,
                pending: deque[InFlight]) -> bool:
        saved = time.monotonic()
        group = Group()

        def flush() -> None:
            nonlocal group
            if group.pages:
                pending.append(InFlight(group.position, group.page_id, len(group.pages), group.revisions,
                                        pool.submit(self.store.write_pages, group.pages)))
                group = Group()
                self._settle(fp, cp, pending, until=2 * self.writers)
        for page in pages:
            fp.revisions_read += len(page.rows)
            if not page.whole:
                # a long page's part, alone: its parent must be stored before it, so what came before is first
                flush()
                self._settle(fp, cp, pending, until=0)
                within = 0 if page.last else page.offset + len(page.rows)
                pending.append(InFlight(page.position, page.page_id, int(page.last), len(page.rows),
                                        pool.submit(self.store.write_pages, [page.rows]), within))
            else:
                if group.revisions + len(page.rows) > self.batch:
                    flush()
                group.add(page.position, page.page_id, page.rows)
                if group.revisions >= self.batch:
                    flush()
            if time.monotonic() - saved >= self.checkpoint_every:
                self._save()
                saved = time.monotonic()
            if self.stop.is_set():
                flush()
                return False
        flush()
        return True

    def _settle(self, fp: FileProgress, cp: FileCheckpoint, pending: deque[InFlight], *, until: int,
                quiet: bool = False) -> None:
        """Account finished writes in dump order, waiting while more than `until` are in flight. A failed write
        is raised (or, when `quiet`, ends the accounting: the pages after it are written again on resume)."""
        while pending and (len(pending) > until or pending[0].future.done()):
            head = pending[0]
            error = head.future.exception()
            if error is not None:
                if quiet:
                    return
                raise error
            pending.popleft()
            with self._figures:
                if head.within:
                    cp.part_page_id, cp.part_revisions = head.page_id, head.within
                else:
                    cp.pages, cp.last_page_id = head.position, head.page_id
                    cp.part_page_id, cp.part_revisions = None, 0
                cp.revisions += head.revisions
                fp.pages_written += head.pages
                fp.revisions_written += head.revisions


@dataclass
class Group:
    """Whole parsed pages not yet handed to a writer, `batch` revisions at most."""
    pages: list[list[Revision]] = field(default_factory=list)
    revisions: int = 0
    position: int = 0               # the last page's position in the file and its id
    page_id: int = 0

    def add(self, position: int, page_id: int, rows: list[Revision]) -> None:
        self.pages.append(rows)
        self.revisions += len(rows)
        self.position, self.page_id = position, page_id


@dataclass(frozen=True)
class InFlight:
    position: int                   # of the group's last page in the file
    page_id: int                    # of that page
    pages: int                      # pages it ends
    revisions: int
    future: Future[None]
    within: int = 0                 # it ends inside its page: the page's revisions written by then


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="dump URLs or paths, in order")
    parser.add_argument("--wiki", required=True, help="storage key of the wiki (host[:port])")
    parser.add_argument("--checkpoint", required=True, help="JSON checkpoint file (created when missing)")
    parser.add_argument("--sqlite", help="SQLite revision store path")
    parser.add_argument("--cassandra", help="Cassandra contact point (host), with --keyspace")
    parser.add_argument("--keyspace", default="blackwidow")
    parser.add_argument("--dbname", help="expected <siteinfo><dbname>")
    parser.add_argument("--host", help="expected host of <siteinfo><base>")
    parser.add_argument("--content", action="store_true", help="store wikitext too")
    parser.add_argument("--user-agent", required=True, help="descriptive User-Agent with a contact")
    parser.add_argument("--checkpoint-every", type=float, default=CHECKPOINT_EVERY, help="seconds")
    parser.add_argument("--writers", type=int, default=WRITERS, help="groups of pages written at once")
    parser.add_argument("--batch", type=int, default=BATCH, help="revisions per group of pages")
    parser.add_argument("--files-at-once", type=int, default=DUMP_FILES_PER_NODE,
                        help="files read at once (default: a spawn's BW_DUMP_FILES_PER_NODE default)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    store: RevisionStore
    if args.cassandra:
        from shared.revisions.cassandra_store import connect
        store = connect([args.cassandra], 9042, args.keyspace)
    else:
        from shared.revisions.sqlite_store import SQLiteRevisionStore
        store = SQLiteRevisionStore(args.sqlite or "revisions.db")
    from shared.http import make_session
    ingest = DumpIngest(args.sources, wiki=args.wiki, store=store, checkpoint=Checkpoint(args.checkpoint),
                        http=make_session(args.user_agent), expected=ExpectedSite(args.dbname, args.host),
                        content=args.content, checkpoint_every=args.checkpoint_every,
                        writers=args.writers, batch=args.batch, files_at_once=args.files_at_once,
                        session_factory=partial(make_session, args.user_agent))
    try:
        ingest.run()
    except DumpError as exc:
        print(f"dump_ingest: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
        print(json.dumps(ingest.progress.snapshot()["total"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
