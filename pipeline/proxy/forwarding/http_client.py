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

The answer and the errors a call ends with are ``upstream_response``'s.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections import deque
from typing import Any
from urllib.parse import urlsplit

import httptools

from pipeline.proxy.forwarding.upstream_response import (
    UpstreamBroken,
    UpstreamConnectError,
    UpstreamResponse,
)


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
