"""Forwarding: one upstream answer (``UpstreamResponse``) as ``http_client``'s connections parse it, and
the errors a backend call ends with.

The connection feeds the answer (``start``, ``feed``, ``complete``, ``fail``, ``closed``); the caller reads
``status``, ``headers`` and the body, whole (``read``) or as it arrives (``iter_any``, with backpressure at
``_HIGH_WATER`` buffered bytes), then ``release``s it. gzip and deflate bodies are decoded as they arrive.

Errors are ``UpstreamError``: ``UpstreamConnectError`` (no connection), ``UpstreamTimeout`` (no byte for
the read timeout, also a ``TimeoutError``) and ``UpstreamBroken`` (closed early or not HTTP).
"""

from __future__ import annotations

import asyncio
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from multidict import CIMultiDict, CIMultiDictProxy

if TYPE_CHECKING:
    from pipeline.proxy.forwarding.http_client import _Connection

_HIGH_WATER = 256 * 1024  # buffered body bytes at which the connection stops reading until some are taken
_NO_BODY_STATUS = frozenset({204, 304})


class UpstreamError(Exception):
    """A call to a backend that did not give a whole answer."""


class UpstreamConnectError(UpstreamError):
    """No connection to the backend (refused, unresolvable, TLS failure, or too slow to connect)."""


class UpstreamTimeout(UpstreamError, TimeoutError):
    """The backend sent nothing for the read timeout."""


class UpstreamBroken(UpstreamError):
    """The backend closed the connection before its answer ended, or answered something not HTTP."""


class UpstreamResponse:
    """One answer: ``status`` and ``headers`` once it starts; ``read()`` or ``iter_any()`` for its body,
    then ``release()`` (or ``async with``) to give the connection back."""

    def __init__(self, conn: _Connection, method: str, read_timeout_s: float) -> None:
        self._conn = conn
        self._head = method == "HEAD"
        self._timeout = read_timeout_s
        self.status = 0
        self.headers: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())
        self._raw_headers: list[tuple[str, str]] = []
        self._started: asyncio.Future[None] = conn.loop.create_future()
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._decoder: Any = None
        self._framed = False  # Content-Length or chunked: a close before the end is a broken answer
        self.got_bytes = False
        self.done = False
        self.error: UpstreamError | None = None
        self._released = False
        self._whole = False
        self.keep_alive = False
        self.on_release: Callable[[], None] | None = None  # frees the pool's slot

    async def __aenter__(self) -> UpstreamResponse:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    # ------------------------------------------------------------------ the reader's side

    async def read(self) -> bytes:
        """The whole body."""
        self._whole = True  # the reader takes everything at once: no reason to hold the backend back
        self._conn.resume()
        while not self.done and self.error is None:
            await self._wait()
        if self.error is not None:
            raise self.error
        data = b"".join(self._chunks)
        self._chunks.clear()
        return data

    async def iter_any(self) -> AsyncIterator[bytes]:
        """The body as it arrives: whatever is buffered at each step, joined."""
        while True:
            if self._chunks:
                data = b"".join(self._chunks) if len(self._chunks) > 1 else self._chunks[0]
                self._chunks.clear()
                if self._buffered >= _HIGH_WATER and not self.done:
                    self._conn.resume()
                self._buffered = 0
                yield data
                continue
            if self.error is not None:
                raise self.error
            if self.done:
                return
            await self._wait()

    def release(self) -> None:
        """Give the connection back when the answer was read to its end and may be kept; else close it."""
        if self._released:
            return
        self._released = True
        self._conn.finished(self, keep=self.done and self.error is None and not self._head)
        if self.on_release is not None:
            self.on_release()

    async def _started_or_failed(self) -> None:
        timer = self._conn.loop.call_later(self._timeout, self._expire, self._started)
        try:
            await self._started
        finally:
            timer.cancel()

    async def _wait(self) -> None:
        fut = self._conn.loop.create_future()
        self._waiter = fut
        timer = self._conn.loop.call_later(self._timeout, self._expire, fut)
        try:
            await fut
        finally:
            timer.cancel()
            self._waiter = None

    def _expire(self, fut: asyncio.Future[None]) -> None:
        if not fut.done():
            self.fail(UpstreamTimeout(f"no answer for {self._timeout:g} s"))
            self._conn.close()

    # ------------------------------------------------------------------ the connection's side

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def start(self, status: int, keep_alive: bool) -> None:
        headers = CIMultiDict(self._raw_headers)
        self.status, self.headers = status, CIMultiDictProxy(headers)
        self._framed = (
            "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
        )
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip"):
            self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._decoder = _Deflate()
        self.keep_alive = keep_alive
        if not self._started.done():
            self._started.set_result(None)
        if self._head or status in _NO_BODY_STATUS:
            self.complete()

    def feed(self, data: bytes) -> None:
        if self.done:
            return
        if self._decoder is not None:
            try:
                data = self._decoder.decompress(data)
            except zlib.error:
                self.fail(UpstreamBroken("backend sent a body that does not decompress"))
                self._conn.close()
                return
            if not data:
                return
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered >= _HIGH_WATER and not self._whole:
            self._conn.pause()
        self._wake()

    def complete(self) -> None:
        if self.done:
            return
        if self._decoder is not None:
            tail = self._decoder.flush()
            if tail:
                self._chunks.append(tail)
        self.done = True
        self._wake()

    def fail(self, error: UpstreamError) -> None:
        if self.done or self.error is not None:
            return
        self.error = error
        if not self._started.done():
            self._started.set_exception(error)
        self._wake()

    def closed(self) -> None:
        """The connection closed: the end of a body framed by the close, or a broken answer."""
        if self._started.done() and not self._framed and self.error is None:
            self.complete()
        else:
            self.fail(UpstreamBroken("backend closed the connection before its answer ended"))


class _Deflate:
    """``Content-Encoding: deflate``: zlib-wrapped as the standard says, or raw as some servers send it."""

    def __init__(self) -> None:
        self._inner: Any = None
        self._first = b""

    def decompress(self, data: bytes) -> bytes:
        if self._inner is None:
            self._first += data
            if len(self._first) < 2:
                return b""
            wrapped = (self._first[0] & 0x0F) == 8 and int.from_bytes(self._first[:2], "big") % 31 == 0
            self._inner = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            data, self._first = self._first, b""
        return self._inner.decompress(data)

    def flush(self) -> bytes:
        return self._inner.flush() if self._inner is not None else b""
