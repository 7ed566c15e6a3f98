"""The census shards this node proves (docs/dumps.md, "The census"), as the hub's ShardDuties say: one thread
proving them one at a time (a shard's listing is what the node holds of a census, so one at a time bounds it), each
proof kept and reported until the hub stops naming its shard. A shard that fails (the store, the wiki) reports its
error and is tried again after RETRY_S; a spawn that restarts proves its named shards again, which writes nothing
twice: the repair only writes what is missing.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Sequence

from shared.census_wire import ShardDuty, ShardProof, ShardReport
from shared.revisions.store import RevisionStore
from spawn.budget_rules import BACKFILL
from spawn.census import prove_shard
from spawn.mediawiki import Cancelled, MediaWikiClient
from spawn.upstream_budget import Demand

logger = logging.getLogger(__name__)

RETRY_S = 10.0
JOIN_S = 2.0

ClientFor = Callable[[str, "str | None"], MediaWikiClient]
Key = tuple[str, str, int]          # (set id, census start, shard)


class ShardProvers:
    """Thread-safe: the poll thread applies duties and reads reports while the prover's thread proves."""

    def __init__(self, client_for: ClientFor, store: RevisionStore, *, retry_s: float = RETRY_S):
        self._client_for, self.store, self.retry_s = client_for, store, retry_s
        self._named: dict[Key, ShardDuty] = {}
        self._proofs: dict[Key, ShardProof] = {}
        self._errors: dict[Key, tuple[str, float]] = {}     # key -> (error, monotonic time to try again)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._cancel = threading.Event()        # the shard being proven is no longer named
        self._current: Key | None = None
        self._thread: threading.Thread | None = None

    def apply(self, duties: Sequence[ShardDuty]) -> None:
        """The shards the hub names now: new ones queued (in the order given), the others forgotten."""
        with self._lock:
            self._named = {d.key: d for d in duties}
            for kept in (self._proofs, self._errors):
                for key in [k for k in kept if k not in self._named]:
                    del kept[key]
            if self._current is not None and self._current not in self._named:
                self._cancel.set()
            if self._named and self._thread is None:
                self._stop = threading.Event()
                self._thread = threading.Thread(target=self._run, args=(self._stop,), name="census-shards",
                                                daemon=True)
                self._thread.start()
        self._wake.set()

    def reports(self) -> tuple[ShardReport, ...]:
        with self._lock:
            out = []
            for key, duty in self._named.items():
                proof, error = self._proofs.get(key), self._errors.get(key)
                if proof is not None or error is not None:
                    out.append(ShardReport(duty.set_id, duty.started_at, duty.shard, proof=proof,
                                           error=None if error is None else error[0]))
            return tuple(out)

    def stop(self) -> None:
        """Stop proving (a detach); the next duties start again."""
        with self._lock:
            thread, self._thread, self._named = self._thread, None, {}
            self._proofs.clear()
            self._errors.clear()
            self._stop.set()
            self._cancel.set()
        self._wake.set()
        if thread is not None:
            thread.join(JOIN_S)

    def _next(self) -> ShardDuty | None:
        now = time.monotonic()
        with self._lock:
            for key, duty in self._named.items():
                if key not in self._proofs and self._errors.get(key, ("", 0.0))[1] <= now:
                    self._current = key
                    self._cancel.clear()
                    return duty
            self._current = None
            return None

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            duty = self._next()
            if duty is None:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            try:
                proof = prove_shard(duty, self._client_for(duty.wiki, duty.identity), self.store,
                                    cancel=self._cancel, demand=Demand(BACKFILL, duty.tenants))
            except Cancelled:           # no longer named, or stopped
                continue
            except Exception as exc:        # the wiki or the store: reported, tried again, never silent
                error = f"{type(exc).__name__}: {exc}"
                logger.warning("census.shard_failed", extra={"set_id": duty.set_id, "shard": duty.shard,
                                                             "error": error})
                with self._lock:
                    if duty.key in self._named:
                        self._errors[duty.key] = (error, time.monotonic() + self.retry_s)
                continue
            logger.info("census.shard_proven", extra={
                "set_id": duty.set_id, "shard": duty.shard, "proven": proof.proven, "wiki": proof.wiki,
                "repaired": proof.repaired, "extra": proof.extra})
            with self._lock:
                if duty.key in self._named:
                    self._proofs[duty.key] = proof
                    self._errors.pop(duty.key, None)
