"""Forwarding: a pooled HTTP/1.1 client on asyncio protocols and httptools' response parser.

What the proxy asks of an upstream client, and no more: kept-alive connections to one backend (at most
``limit`` at once), each request written in one call, the answer's status and headers, and its body read
whole or as it arrives, with backpressure. https backends get TLS with the system's trust store. Bodies
framed by Content-Length, chunked or by the connection's close are all read; a gzip or deflate body is
decoded (requests ask for no encoding, a backend may send one anyway).

A connection goes back to the pool only when its answer was read to the end and the backend keeps it alive;
an answer left unread closes it. A connection idle for longer than ``keepalive_s`` is not used again. A
request on a reused connection that the backend closes before a byte of the answer arrives is sent once
more on a new connection: the backend closed the idle connection while the request was on its way.

Errors are ``UpstreamError``: ``UpstreamConnectError`` (no connection), ``UpstreamTimeout`` (no byte for
``read_timeout_s``, also a ``TimeoutError``) and ``UpstreamBroken`` (closed early or not HTTP).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import httptools
from multidict import CIMultiDict, CIMultiDictProxy

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


class _Connection(asyncio.Protocol):
    """One kept-alive connection; it carries one request and its answer at a time."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.loop = asyncio.get_running_loop()
        self.transport: Any = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: UpstreamResponse | None = None
        self.is_closed = False
        self.idle_since = 0.0
        self._paused = False

    # asyncio.Protocol
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        resp = self.response
        if resp is None:  # bytes with no request outstanding: not a connection to keep
            self.close()
            return
        resp.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as err:
            resp.fail(UpstreamBroken(f"backend answered something that is not HTTP/1.1 ({err})"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.is_closed = True
        self.pool.forget(self)
        if self.response is not None:
            self.response.closed()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.response._raw_headers.append((name.decode("latin-1"), value.decode("latin-1")))  # type: ignore[union-attr]

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:  # an interim answer (103 Early Hints): the real one follows on the same connection
            self.response._raw_headers.clear()  # type: ignore[union-attr]
            return
        self.response.start(status, self.parser.should_keep_alive())  # type: ignore[union-attr]

    def on_body(self, body: bytes) -> None:
        self.response.feed(body)  # type: ignore[union-attr]

    def on_message_complete(self) -> None:
        if self.parser.get_status_code() >= 200:
            self.response.complete()  # type: ignore[union-attr]

    # the pool's side
    def send(self, data: bytes, response: UpstreamResponse) -> None:
        self.response = response
        self.transport.write(data)

    def finished(self, response: UpstreamResponse, keep: bool) -> None:
        if self.response is response:
            self.response = None
        if keep and response.keep_alive and not self.is_closed:
            self.pool.checkin(self)
        else:
            self.close()

    def pause(self) -> None:
        if not self._paused and not self.is_closed:
            self._paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self._paused and not self.is_closed:
            self._paused = False
            self.transport.resume_reading()

    def close(self) -> None:
        if not self.is_closed:
            self.is_closed = True
            self.transport.close()
            self.pool.forget(self)


class Pool:
    """Kept-alive connections to one backend's origin, and the requests sent on them."""

    def __init__(
        self,
        base_url: str,
        limit: int,
        connect_timeout_s: float,
        read_timeout_s: float,
        keepalive_s: float = 30.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        url = urlsplit(base_url)
        self.scheme = url.scheme
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if url.scheme == "https" else 80)
        default_port = self.port == (443 if url.scheme == "https" else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = host if default_port else f"{host}:{self.port}"
        self.base_path = url.path.rstrip("/")
        self.ssl = ssl.create_default_context() if url.scheme == "https" else None
        self.connect_timeout_s, self.read_timeout_s, self.keepalive_s = (
            connect_timeout_s,
            read_timeout_s,
            keepalive_s,
        )
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self._head_lines = _header_lines(self.headers)
        self._idle: deque[_Connection] = deque()
        self._open: set[_Connection] = set()
        self._slots = asyncio.Semaphore(limit)

    async def request(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> UpstreamResponse:
        """Send ``method target`` (below the base URL's path) and return once the answer's head arrived."""
        lines = self._head_lines
        if headers:
            lines = _header_lines({**self.headers, **{k.lower(): v for k, v in headers.items()}})
        length = (
            f"content-length: {len(body)}\r\n"
            if body is not None or method in ("POST", "PUT", "PATCH")
            else ""
        )
        head = (
            f"{method} {self.base_path}{target} HTTP/1.1\r\nhost: {self.host_header}\r\n{lines}{length}\r\n"
        )
        data = head.encode("latin-1") + body if body else head.encode("latin-1")
        await self._slots.acquire()
        try:
            for attempt in (0, 1):
                conn, reused = await self._connection()
                resp = UpstreamResponse(conn, method, self.read_timeout_s)
                conn.send(data, resp)
                try:
                    await resp._started_or_failed()
                except UpstreamBroken:
                    resp.release()
                    if reused and not resp.got_bytes and attempt == 0:
                        continue  # closed while idle as the request went out: once more, on a new one
                    raise
                except BaseException:
                    resp.release()
                    raise
                resp.on_release = self._slots.release
                return resp
        except BaseException:
            self._slots.release()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connection(self) -> tuple[_Connection, bool]:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to be closed by the backend
            if conn.is_closed:
                continue
            if now - conn.idle_since > self.keepalive_s:
                conn.close()
                continue
            return conn, True
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(self),
                    self.host,
                    self.port,
                    ssl=self.ssl,
                    server_hostname=self.host if self.ssl else None,
                ),
                self.connect_timeout_s,
            )
        except TimeoutError:
            raise UpstreamConnectError(f"no connection within {self.connect_timeout_s:g} s") from None
        except (OSError, ssl.SSLError) as err:
            raise UpstreamConnectError(type(err).__name__) from None
        self._open.add(conn)
        return conn, False

    def checkin(self, conn: _Connection) -> None:
        conn.idle_since = time.monotonic()
        self._idle.append(conn)

    def forget(self, conn: _Connection) -> None:
        self._open.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)

    def close(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._idle.clear()


def _header_lines(headers: dict[str, str]) -> str:
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0"):
            raise ValueError(f"header {name!r} holds a line break")
    return "".join(f"{name}: {value}\r\n" for name, value in headers.items())
