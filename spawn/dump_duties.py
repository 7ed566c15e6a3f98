"""The dump files this node reads for the cluster (docs/dumps.md, "Bootstrapping through the hub"): one thread per
file a poll's DumpDuty names, at most `max_running` at once (an ingest keeps a core busy), each a DumpIngest from
the duty's resume point, and how far each got, reported until the hub stops naming the file. The thin I/O shell:
the hub keeps the resume points and decides which node reads what, so nothing here outlives a detach.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict
from typing import Callable, Sequence
from urllib.parse import urlsplit

from shared.dump_wire import DONE, FAILED, READING, STOPPED, DumpDuty, DumpReport, Resume
from shared.hashing import wiki_key
from shared.revisions.store import RevisionStore
from spawn.dump_ingest import BATCH, Checkpoint, DumpIngest, FileCheckpoint
from spawn.dump_rows import DumpError, ExpectedSite
from spawn.dump_stream import Session
from spawn.metrics import SpawnMetrics

logger = logging.getLogger(__name__)

JOIN_S = 2.0        # how long stop() waits for the ingests to end (a stalled read ends only at its read timeout)


def expected_site(duty: DumpDuty) -> ExpectedSite:
    """What the file's <siteinfo> must say. The dbname, when the hub gives one, is the whole check: it names the
    wiki wherever the dump is served from or imported into (the local test wiki at 127.0.0.1 holds Chamorro
    Wikipedia, whose dump's <base> is ch.wikipedia.org). Without one, the <base> host must be the wiki's."""
    if duty.dbname is not None:
        return ExpectedSite(dbname=duty.dbname)
    return ExpectedSite(host=urlsplit(f"//{wiki_key(duty.wiki)}").hostname)


def ended(state: str, stopped: bool, error: str | None) -> tuple[str, str | None]:
    """A finished ingest's (state, error) from its file's progress state. Anything but done or failed is stopped
    when it was asked to stop, else a failure (an ingest never ends early on its own)."""
    if state in (DONE, FAILED):
        return state, error if state == FAILED else None
    if stopped:
        return STOPPED, None
    return FAILED, error or f"the ingest ended in state {state!r}"


def resumed_at(cp: FileCheckpoint) -> Resume:
    """The hub's resume point of a file: its checkpoint, which holds the same fields and whether it is done."""
    return Resume(**{k: v for k, v in asdict(cp).items() if k != "done"})


class DumpRunner:
    """One file's ingest on a thread of its own. Thread-safe: the poll thread reads report() while it runs."""

    def __init__(self, duty: DumpDuty, *, store: RevisionStore, http: Session | None,
                 on_end: Callable[[DumpRunner], None], batch: int = BATCH,
                 session_factory: Callable[[], Session] | None = None):
        self.duty = duty
        self.dropped = False            # stopped because the hub no longer names it: never reported again
        self._stop = threading.Event()
        self._ended = threading.Event()
        self._error: str | None = None  # an exception the ingest did not record itself
        self._on_end = on_end
        self.ingest: DumpIngest | None = None
        try:
            self.ingest = self._ingest(store, http, batch, session_factory)
        except Exception as exc:        # a duty no ingest can be made of (a wiki URL with a bad port) fails alone
            self._error = f"{type(exc).__name__}: {exc}"
        self._thread = threading.Thread(target=self._run, name=f"dump-{duty.file_id}", daemon=True)

    def _ingest(self, store: RevisionStore, http: Session | None, batch: int,
                session_factory: Callable[[], Session] | None) -> DumpIngest:
        duty, r = self.duty, self.duty.resume
        checkpoint = Checkpoint(None, {duty.url: FileCheckpoint(**asdict(r))})
        ingest = DumpIngest([duty.url], wiki=wiki_key(duty.wiki), store=store, checkpoint=checkpoint, http=http,
                            expected=expected_site(duty), content=duty.content, batch=batch, stop=self._stop,
                            namespaces=duty.namespaces, page_ids=duty.page_ids, session_factory=session_factory)
        # cumulative over every node that read the file: the hub's resume point counts what the others wrote
        fp = ingest.progress.files[0]
        fp.pages_written, fp.revisions_written = r.pages, r.revisions
        return ingest

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def start(self) -> None:
        self._thread.start()

    def drop(self) -> None:
        self.dropped = True
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        extra = {"file_id": self.duty.file_id, "url": self.duty.url, "wiki": self.duty.wiki}
        try:
            if self.ingest is None:
                logger.warning("dump.refused", extra={**extra, "error": self._error})
            else:
                self.ingest.run()
        except DumpError as exc:        # the ingest recorded it as the file's error
            logger.warning("dump.failed", extra={**extra, "error": f"{type(exc).__name__}: {exc}"})
        except Exception as exc:        # a store failure, a refused address, a bug: reported, never silent
            self._error = f"{type(exc).__name__}: {exc}"
            logger.exception("dump.crashed", extra={**extra, "error": self._error})
        finally:
            self._ended.set()
            self._on_end(self)

    def report(self) -> DumpReport:
        finished = self.ended           # read first: once set, the progress read after it is final
        if self.ingest is None:
            return DumpReport(file_id=self.duty.file_id, state=FAILED if finished else READING,
                              resume=self.duty.resume, error=self._error if finished else None)
        cp, fp = self.ingest.figures()
        state, error = READING, None
        if finished:
            state, error = ended(fp.state, self._stop.is_set(), fp.error or self._error)
        progress = self.ingest.progress
        elapsed = max((progress.finished or time.monotonic()) - progress.started, 1e-9)
        return DumpReport(file_id=self.duty.file_id, state=state,
                          resume=resumed_at(cp), bytes_read=fp.bytes_read,
                          bytes_total=fp.bytes_total, revisions_read=fp.revisions_read,
                          revisions_per_s=max(fp.revisions_written - self.duty.resume.revisions, 0) / elapsed,
                          bytes_per_s=fp.bytes_read / elapsed, error=error)


class DumpRunners:
    """The dump files this node reads, as the hub's duties say; a detach stops them all."""

    def __init__(self, store: RevisionStore, http: Session | None, metrics: SpawnMetrics | None = None, *,
                 max_running: int = 1, join_s: float = JOIN_S, batch: int = BATCH,
                 session_factory: Callable[[], Session] | None = None):
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.store, self.http = store, http
        # given: files are walked in child processes with sessions it makes (spawn.dump_parse), and `http` may be
        # None; else in this process with `http`
        self.session_factory = session_factory
        self.metrics = metrics or SpawnMetrics()
        self.max_running, self.join_s, self.batch = max_running, join_s, batch
        self._named: dict[str, DumpDuty] = {}           # in the hub's order: files start in it
        self._runners: dict[str, DumpRunner] = {}       # started, running or ended, by file id
        self._lock = threading.Lock()

    def apply(self, duties: Sequence[DumpDuty]) -> None:
        """Start the files the duties name (in their order, while fewer than max_running read), stop the others.
        A file that ended while named is not read again: its final report stays until the hub stops naming it,
        which is how the hub acknowledges it. Named again after that, it starts over from the duty's resume."""
        with self._lock:
            self._named = {duty.file_id: duty for duty in duties}
            for file_id, runner in self._runners.items():
                if file_id not in self._named and not runner.dropped:
                    runner.drop()
                    logger.info("dump.stopped", extra={"file_id": file_id})
            self._settle()

    def reports(self) -> dict[str, DumpReport]:
        """{file id: its report} for the files started here and still named; one waiting for a free slot has
        none (the hub reads that as not started yet)."""
        with self._lock:
            runners = [r for r in self._runners.values() if not r.dropped]
        return {r.duty.file_id: r.report() for r in runners}

    def stop(self) -> None:
        """Stop every ingest and forget every file (detach, shutdown), waiting up to join_s for them to end."""
        with self._lock:
            runners = list(self._runners.values())
        self.apply(())
        deadline = time.monotonic() + self.join_s
        for runner in runners:
            runner.join(max(deadline - time.monotonic(), 0.0))

    def _ended(self, runner: DumpRunner) -> None:
        state = runner.report().state
        self.metrics.dump_files.labels(outcome=state).inc()
        logger.info("dump.ended", extra={"file_id": runner.duty.file_id, "state": state})
        with self._lock:
            self._settle()

    def _settle(self) -> None:
        """Forget the dropped files whose ingest ended and start named ones while slots are free. Lock held."""
        for file_id in [f for f, r in self._runners.items() if r.dropped and r.ended]:
            del self._runners[file_id]
        # a dropped ingest still reading holds its slot: it still keeps a core busy until it notices
        running = sum(not r.ended for r in self._runners.values())
        for file_id, duty in self._named.items():
            if running >= self.max_running:
                break
            if file_id in self._runners:
                continue
            runner = DumpRunner(duty, store=self.store, http=self.http, on_end=self._ended, batch=self.batch,
                                session_factory=self.session_factory)
            self._runners[file_id] = runner
            runner.start()
            running += 1
            logger.info("dump.started", extra={"file_id": file_id, "url": duty.url, "resume": duty.resume.pages})
        self.metrics.dump_files_running.set(running)
