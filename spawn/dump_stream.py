"""Open one dump file as a stream of decompressed bytes: an http(s) URL read with `requests` as it arrives (never
saved to disk first) or a local path, plain, gzip or bzip2 by the name's ending, read and decompressed a few
blocks ahead on a thread of its own, a megabyte of compressed bytes per decompressor call. Counts the
compressed bytes read and turns transport and decompression failures into the named errors of spawn.dump_rows."""
from __future__ import annotations

import bz2
import io
import os
import queue
import threading
import zlib
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator
from xml.etree.ElementTree import ParseError

import requests

from spawn.dump_rows import DumpCorrupt, DumpError, DumpNotFound, DumpStalled

Session = requests.Session      # what callers pass in: the dump transport is this module's alone

CHUNK = 1 << 16
# The decompressor releases the interpreter lock while it works, and needs it back each time its output buffer
# grows or a call returns: with BZ2File's 8 KiB reads (or 64 KiB ones) the parser thread, holding the lock, makes it
# wait a switch interval (5 ms) every few milliseconds of work and nothing overlaps. Large calls overlap.
INFLATE_IN = 1 << 20        # compressed bytes handed to the decompressor at once
INFLATE_OUT = 1 << 23       # decompressed bytes one call may return: bounds memory on any stream
AHEAD = 2                   # decompressed blocks held ready ahead of the parser
STOP_WAIT_S = 5.0           # how long closing waits for the read-ahead thread to finish its current read
_GZIP = 16 + zlib.MAX_WBITS  # zlib's window bits for a gzip member (header and trailer checked)
_TRUNCATED = "Compressed file ended before the end-of-stream marker was reached"


class _ReadAhead(io.RawIOBase):
    """A readable stream over `blocks`, taken (and so downloaded and decompressed) on a thread of its own, a few
    blocks ahead of the reader. bz2, zlib and socket reads release the interpreter lock while they work, so the
    parser and the store writers run meanwhile instead of after. A failure of the thread is raised to the reader,
    in order."""

    def __init__(self, blocks: Iterator[bytes]):
        self._queue: queue.Queue[bytes | BaseException | None] = queue.Queue(AHEAD)
        self._stop = threading.Event()
        self._block = memoryview(b"")
        self._ended = False
        self._thread = threading.Thread(target=self._fill, args=(blocks,), name="dump-read", daemon=True)
        self._thread.start()

    def _fill(self, blocks: Iterator[bytes]) -> None:
        try:
            for block in blocks:
                if self._stop.is_set():
                    return
                if block:
                    self._put(block)
            self._put(None)
        except BaseException as exc:        # handed to the reader, which raises it
            self._put(exc)

    def _put(self, item: bytes | BaseException | None) -> None:
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
            if item is None:
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


def _counted(chunks: Iterable[bytes], counted: Callable[[int], None]) -> Iterator[bytes]:
    for chunk in chunks:
        counted(len(chunk))
        yield chunk


def _joined(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    """`chunks` joined into pieces of at least `size` bytes (the last one shorter)."""
    parts: list[bytes] = []
    held = 0
    for chunk in chunks:
        parts.append(chunk)
        held += len(chunk)
        if held >= size:
            yield b"".join(parts)
            parts, held = [], 0
    if parts:
        yield b"".join(parts)


def _blocks(chunks: Iterable[bytes], kind: str) -> Iterator[bytes]:
    """The decompressed bytes of compressed `chunks`, in blocks, INFLATE_IN compressed bytes per decompressor call
    (bz2.BZ2File and gzip.GzipFile feed theirs 8 KiB at a time)."""
    chunks = _joined(chunks, INFLATE_IN)
    if kind == "gzip":
        return _gzip_blocks(chunks)
    if kind == "bzip2":
        return _bzip2_blocks(chunks)
    return iter(chunks)


def _bzip2_blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Concatenated streams (multistream dumps) read as one; bytes after a stream that start no valid stream are
    ignored, as bz2.BZ2File does. EOFError when the data ends inside a stream."""
    decompressor, fed = bz2.BZ2Decompressor(), False
    for data in chunks:
        while True:
            if decompressor.eof:
                data = decompressor.unused_data + data
                if not data:
                    break
                decompressor, fed = bz2.BZ2Decompressor(), False
                try:
                    out = decompressor.decompress(data, INFLATE_OUT)
                except OSError:
                    return
            else:
                out = decompressor.decompress(data, INFLATE_OUT)
            fed, data = fed or bool(data), b""
            if out:
                yield out
            if not decompressor.eof and decompressor.needs_input:
                break
    if fed and not decompressor.eof:
        raise EOFError(_TRUNCATED)


def _gzip_blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Several members read as one (zero bytes between them allowed), each member's CRC and length checked, as
    gzip.GzipFile does. EOFError when the data ends inside a member."""
    decompressor, fed = zlib.decompressobj(_GZIP), False
    for data in chunks:
        while data:
            if decompressor.eof:
                data = data.lstrip(b"\0")
                if not data:
                    break
                decompressor, fed = zlib.decompressobj(_GZIP), False
            out = decompressor.decompress(data, INFLATE_OUT)
            fed = True
            while out:
                yield out
                pending = not (decompressor.eof or decompressor.unconsumed_tail)   # output held back by the limit
                out = decompressor.decompress(b"", INFLATE_OUT) if pending else b""
            data = decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
    if fed and not decompressor.eof:
        raise EOFError(_TRUNCATED)


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
        with io.BufferedReader(_ReadAhead(_blocks(_counted(chunks, counted), compression(source))), CHUNK) as stream:
            yield stream, total
    finally:
        if resp is not None:
            resp.close()
        else:
            local.close()
