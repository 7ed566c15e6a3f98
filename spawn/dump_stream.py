"""Open one dump file as a stream of decompressed bytes: an http(s) URL read with `requests` as it arrives (never
saved to disk first) or a local path, plain, gzip or bzip2 by the name's ending, read and decompressed a few
blocks ahead on a thread of its own. Counts the compressed bytes read and turns transport and decompression
failures into the named errors of spawn.dump_rows."""
from __future__ import annotations

import bz2
import gzip
import io
import os
import queue
import threading
import zlib
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from xml.etree.ElementTree import ParseError

import requests

from spawn.dump_rows import DumpCorrupt, DumpError, DumpNotFound, DumpStalled

Session = requests.Session      # what callers pass in: the dump transport is this module's alone

CHUNK = 1 << 16
AHEAD = 8                   # decompressed blocks of AHEAD_BLOCK bytes held ready ahead of the parser
AHEAD_BLOCK = 1 << 18
STOP_WAIT_S = 5.0           # how long closing waits for the read-ahead thread to finish its current read


class _Chunks(io.RawIOBase):
    """A readable raw stream over an iterator of byte chunks, calling `counted(n)` for every chunk taken."""

    def __init__(self, chunks: Iterator[bytes], counted: Callable[[int], None]):
        self._chunks = chunks
        self._counted = counted
        self._rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._rest:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._counted(len(chunk))
            self._rest = chunk
        n = min(len(buffer), len(self._rest))
        buffer[:n] = self._rest[:n]
        self._rest = self._rest[n:]
        return n


class _ReadAhead(io.RawIOBase):
    """Reads (and so decompresses and downloads) `source` on a thread of its own, a few blocks ahead of the
    reader. bz2, zlib and socket reads release the interpreter lock while they work, so the parser and the store
    writers (Python) run meanwhile instead of after. A failure of the thread is raised to the reader, in order."""

    def __init__(self, source: io.BufferedIOBase):
        self._queue: queue.Queue[bytes | BaseException] = queue.Queue(AHEAD)
        self._stop = threading.Event()
        self._block = memoryview(b"")
        self._ended = False
        self._thread = threading.Thread(target=self._fill, args=(source,), name="dump-read", daemon=True)
        self._thread.start()

    def _fill(self, source: io.BufferedIOBase) -> None:
        try:
            while not self._stop.is_set():
                block = source.read(AHEAD_BLOCK)
                self._put(block)
                if not block:
                    return
        except BaseException as exc:        # handed to the reader, which raises it
            self._put(exc)

    def _put(self, item: bytes | BaseException) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._block:
            if self._ended:
                return 0
            item = self._queue.get()
            if isinstance(item, BaseException):
                self._ended = True
                raise item
            if not item:
                self._ended = True
                return 0
            self._block = memoryview(item)
        n = min(len(buffer), len(self._block))
        buffer[:n] = self._block[:n]
        self._block = self._block[n:]
        return n

    def close(self) -> None:
        """Stop reading ahead; waits for the thread's current read (a stalled one only STOP_WAIT_S)."""
        self._stop.set()
        self._thread.join(STOP_WAIT_S)
        super().close()


def compression(name: str) -> str:
    """"gzip", "bzip2" or "plain", from the file name (the query string ignored)."""
    path = name.split("?", 1)[0].lower()
    if path.endswith(".gz"):
        return "gzip"
    if path.endswith(".bz2"):
        return "bzip2"
    return "plain"


def _decompressed(raw: io.RawIOBase, kind: str) -> io.BufferedIOBase:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bzip2":
        return bz2.BZ2File(raw, mode="rb")
    return io.BufferedReader(raw, CHUNK)


def _http_chunks(http: requests.Session, url: str, timeout: tuple[float, float]
                 ) -> tuple[requests.Response, Iterator[bytes]]:
    try:
        resp = http.get(url, stream=True, timeout=timeout, headers={"Accept-Encoding": "identity"})
    except requests.Timeout as exc:
        raise DumpStalled(f"{url}: no answer within {timeout[0]:g}/{timeout[1]:g} s ({exc.__class__.__name__})") \
            from None
    except requests.RequestException as exc:
        raise DumpNotFound(f"{url}: {exc.__class__.__name__}: {exc}") from None
    if resp.status_code != 200:
        resp.close()
        raise DumpNotFound(f"{url}: HTTP {resp.status_code}")
    return resp, resp.iter_content(CHUNK)


@contextmanager
def translated(source: str) -> Iterator[None]:
    """Map failures met while reading `source` to the named dump errors."""
    try:
        yield
    except DumpError:
        raise
    except (requests.Timeout, requests.exceptions.ConnectionError) as exc:
        raise DumpStalled(f"{source}: connection stalled or dropped ({exc.__class__.__name__})") from None
    except requests.exceptions.ChunkedEncodingError as exc:
        raise DumpCorrupt(f"{source}: transfer ended early ({exc.__class__.__name__})") from None
    except EOFError as exc:
        raise DumpCorrupt(f"{source}: truncated compressed stream ({exc})") from None
    except (OSError, zlib.error) as exc:
        raise DumpCorrupt(f"{source}: corrupt compressed stream ({exc})") from None
    except ParseError as exc:
        raise DumpCorrupt(f"{source}: XML does not parse ({str(exc)[:200]})") from None


@contextmanager
def open_dump(source: str, http: requests.Session, counted: Callable[[int], None], *,
              timeout: tuple[float, float] = (10.0, 60.0)) -> Iterator[tuple[io.BufferedIOBase, int | None]]:
    """(decompressed byte stream, compressed size or None). `counted` hears every compressed chunk read."""
    resp: requests.Response | None = None
    if source.startswith(("http://", "https://")):
        resp, chunks = _http_chunks(http, source, timeout)
        length = resp.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
    else:
        try:
            local = open(source, "rb")
        except OSError as exc:
            raise DumpNotFound(f"{source}: {exc.strerror}") from None
        total = os.fstat(local.fileno()).st_size
        chunks = iter(lambda: local.read(CHUNK), b"")
    try:
        with _decompressed(_Chunks(chunks, counted), compression(source)) as stream, _ReadAhead(stream) as ahead:
            yield io.BufferedReader(ahead, CHUNK), total
    finally:
        if resp is not None:
            resp.close()
        else:
            local.close()
