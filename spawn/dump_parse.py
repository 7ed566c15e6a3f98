"""The walk of one dump file into rows: which pages a file yields and from where a resumed read starts, and where
the walk runs, in this process or in a process of its own.

The walk (mwxml, to_row) and the store's writing (the driver's statement binding) are both interpreter-bound, so
in one process they take turns under one lock, however many threads. In a child process the walk runs beside
the writer on another core; the rows come back pickled, a few hundred pages at a time, over a pipe whose
backpressure keeps the child at most a message or two ahead. The child opens the file itself (with a session
from a picklable factory: the spawn's session checks every address it connects to) and reports the compressed
bytes it read with each message. Its failures arrive as the same DumpErrors the in-process walk raises.

Children come from a forkserver that has this module loaded: starting one costs milliseconds, not an interpreter
start, and nothing of the parent's threads (the Cassandra driver's, the poller's) is forked.
"""
from __future__ import annotations

import io
import multiprocessing
import sys
import threading
import traceback
import types
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from typing import Callable, Iterator

import mwxml  # type: ignore[import-untyped]
from mwxml.element_iterator import ElementIterator  # type: ignore[import-untyped]

from shared.revisions.model import Revision
from spawn.dump_rows import DumpCorrupt, DumpError, ExpectedSite, check_schema, check_site, to_row
from spawn.dump_stream import Session, open_dump, translated

MESSAGE_REVISIONS = 500     # revisions per message from a child: big enough to amortize a pipe round
PART = 2000                 # revisions of a long page handed over at once (spawn.dump_ingest: one store call)
JOIN_S = 5.0                # how long closing waits for a child to end before it is killed
PROGRESS_S = 1.0            # a child's bytes read reach the parent at least this often while it reads


@dataclass(frozen=True)
class Parsed:
    """A page of the file to write, or a part of a long one: its position in the file (1-based, counting every
    page), id and rows; `offset`: the page's revisions before these rows (written earlier, or in earlier parts);
    `last`: these rows end the page."""
    position: int
    page_id: int
    rows: list[Revision]
    offset: int = 0
    last: bool = True

    @property
    def whole(self) -> bool:
        return self.offset == 0 and self.last


@dataclass(frozen=True)
class WalkSpec:
    """What a walk of one file needs, all of it picklable."""
    source: str
    wiki: str
    expected: ExpectedSite = ExpectedSite()
    content: bool = False
    timeout: tuple[float, float] = (10.0, 60.0)
    skip: int = 0                           # pages of the file already written (a resume)
    last_page_id: int | None = None         # the id of the last of them, checked
    namespaces: frozenset[int] | None = None
    page_ids: frozenset[int] | None = None
    # a long page is handed over in parts of at most `part` revisions: a page's whole history is never held at once
    # (some have a million revisions); a resume inside one skips the first `part_revisions` of page `part_page_id`
    part: int = PART
    part_page_id: int | None = None
    part_revisions: int = 0

    def wanted(self, ns: int, page_id: int) -> bool:
        """Whether a page of the file is one of the set's (its namespaces, its members)."""
        return ((self.namespaces is None or ns in self.namespaces)
                and (self.page_ids is None or page_id in self.page_ids))


def opened(stream: io.BufferedIOBase, expected: ExpectedSite) -> mwxml.Dump:
    """The dump of a decompressed stream, its root, schema and site checked."""
    root = ElementIterator.from_file(stream)
    if root.tag != "mediawiki":
        raise DumpCorrupt(f"root element <{root.tag}>, expected <mediawiki>")
    check_schema(root.attr("version"))
    dump = mwxml.Dump.from_element(root)
    check_site(dump.site_info.dbname, dump.site_info.base, expected)
    return dump


def walk(dump: mwxml.Dump, spec: WalkSpec) -> Iterator[Parsed]:
    """The file's pages to write, in order: after the `skip` already written (the last of them must be the id the
    checkpoint names), of the wanted namespaces and members only."""
    position = 0
    for page in dump.pages:
        position += 1
        if position <= spec.skip:
            if position == spec.skip and page.id != spec.last_page_id:
                raise DumpCorrupt(f"page {position} of the file is id {page.id}, the checkpoint says "
                                  f"{spec.last_page_id}: the file changed since")
            continue
        if not spec.wanted(int(page.namespace), int(page.id)):
            continue
        written = spec.part_revisions if int(page.id) == spec.part_page_id else 0
        yield from _parts(position, page, written, spec)


def _parts(position: int, page: mwxml.Page, written: int, spec: WalkSpec) -> Iterator[Parsed]:
    """A page's revisions after the first `written`, in parts of at most `spec.part`; the last part ends the page
    (a page without revisions left is one empty last part)."""
    page_id, offset = int(page.id), written
    rows: list[Revision] = []
    for n, rev in enumerate(page):
        if n < written:
            continue                # written before a resume: mwxml reads past them, nothing is built
        if len(rows) == spec.part:
            yield Parsed(position, page_id, rows, offset, last=False)
            offset, rows = offset + len(rows), []
        rows.append(to_row(spec.wiki, page, rev, spec.content))
    yield Parsed(position, page_id, rows, offset, last=True)


@contextmanager
def walk_here(spec: WalkSpec, http: Session, counted: Callable[[int], None]
              ) -> Iterator[tuple[int | None, Iterator[Parsed]]]:
    """(compressed size or None, the pages) walked in this process."""
    with translated(spec.source), open_dump(spec.source, http, counted, timeout=spec.timeout) as (stream, total):
        yield total, _opened_walk(stream, spec)     # read within the block: its failures are translated too


def _opened_walk(stream: io.BufferedIOBase, spec: WalkSpec) -> Iterator[Parsed]:
    """walk() of the stream, opened (and checked) at the first page asked for: the size is known before."""
    yield from walk(opened(stream, spec.expected), spec)


# -- the walk in a child process ---------------------------------------------------------------------------------

_OPENED, _PAGES, _PROGRESS, _END, _ERROR = "opened", "pages", "progress", "end", "error"
_context_lock = threading.Lock()
_context: multiprocessing.context.ForkServerContext | None = None


def _forkserver() -> multiprocessing.context.ForkServerContext:
    global _context
    with _context_lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([__name__, *_main_imports()])
            _context = context
        return _context


def _main_imports() -> list[str]:
    """The modules the main module took names from, when it runs as `python -m name`: multiprocessing runs that
    module's body again in every child, and with these already loaded in the forkserver that costs only the body
    (`python -m gunicorn`, as a spawn runs, is a package's __main__, which multiprocessing does not run again)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if main is None or not name or name.endswith("__main__"):
        return []
    found = set()
    for value in vars(main).values():
        module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if isinstance(module, str) and module not in ("__main__", "builtins"):
            found.add(module)
    return sorted(found)


def start_walker() -> None:
    """Start the forkserver now rather than at the first file (its start is an interpreter's: about half a
    second, once per process)."""
    _forkserver()
    forkserver.ensure_running()


class ChildFailed(DumpError):
    """The walk's process failed in a way that is not a dump error (it died, or raised something unforeseen)."""


class _Reporter:
    """The child's side of the pipe: every message carries the compressed bytes read so far, and a beat sends them
    every PROGRESS_S while no page is ready (a namespace set skips long stretches of a file)."""

    def __init__(self, conn: Connection):
        self.conn, self.read = conn, 0
        self._lock = threading.Lock()
        self._done = threading.Event()

    def counted(self, n: int) -> None:
        self.read += n

    def send(self, kind: str, value: object) -> None:
        with self._lock:
            self.conn.send((kind, value, self.read))

    def beat(self) -> None:
        sent = self.read
        while not self._done.wait(PROGRESS_S):
            if self.read != sent:
                sent = self.read
                self.send(_PROGRESS, None)

    def close(self) -> None:
        self._done.set()


def _child(conn: Connection, spec: WalkSpec, session_factory: Callable[[], Session]) -> None:
    out = _Reporter(conn)
    try:
        with walk_here(spec, session_factory(), out.counted) as (total, pages):
            out.send(_OPENED, total)
            threading.Thread(target=out.beat, name="dump-walk-beat", daemon=True).start()
            batch: list[Parsed] = []
            revisions = 0
            for parsed in pages:
                batch.append(parsed)
                revisions += len(parsed.rows)
                if revisions >= MESSAGE_REVISIONS:
                    out.send(_PAGES, batch)
                    batch, revisions = [], 0
            out.send(_PAGES, batch)
        out.close()
        out.send(_END, None)
    except DumpError as exc:
        out.close()
        out.send(_ERROR, exc)
    except (BrokenPipeError, EOFError):
        pass                                # the parent stopped listening: nothing left to tell
    except BaseException as exc:            # handed over as text: not every exception pickles
        out.close()
        out.send(_ERROR, ChildFailed(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"))
    finally:
        out.close()
        conn.close()


@contextmanager
def walk_in_child(spec: WalkSpec, session_factory: Callable[[], Session], counted: Callable[[int], None]
                  ) -> Iterator[tuple[int | None, Iterator[Parsed]]]:
    """(compressed size or None, the pages) walked in a child process; raises its DumpErrors here. Leaving the
    block ends the child (a walk left early is killed)."""
    context = _forkserver()
    ours, theirs = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(theirs, spec, session_factory), name="dump-walk", daemon=True)
    process.start()
    theirs.close()
    reported, ended = 0, False

    def receive() -> tuple[str, object]:
        nonlocal reported
        try:
            kind, value, read = ours.recv()
        except EOFError:
            process.join(JOIN_S)
            raise ChildFailed(f"{spec.source}: the dump walk's process ended with code {process.exitcode}") \
                from None
        counted(read - reported)
        reported = read
        if kind == _ERROR:
            assert isinstance(value, DumpError)
            raise value
        return kind, value

    def pages() -> Iterator[Parsed]:
        nonlocal ended
        while True:
            kind, value = receive()
            if kind == _END:
                ended = True
                return
            if kind == _PAGES:
                yield from value        # type: ignore[misc]

    try:
        kind, total = receive()
        assert kind == _OPENED
        yield total, pages()            # type: ignore[misc]
    finally:
        ours.close()
        process.join(JOIN_S if ended else 0)
        if process.is_alive():
            process.kill()
            process.join(JOIN_S)
