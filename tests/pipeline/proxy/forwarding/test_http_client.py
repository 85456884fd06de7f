"""The pooled upstream client against a real TCP server that answers each request as a test scripts it:
every body framing, encodings, keep-alive reuse, a backend closing idle connections, timeouts, refusals,
backpressure and interim answers."""

from __future__ import annotations

import asyncio
import gzip
import socket
import zlib
from collections.abc import Awaitable, Callable

import pytest

from pipeline.proxy.forwarding.http_client import Pool
from pipeline.proxy.forwarding.upstream_response import UpstreamBroken, UpstreamConnectError, UpstreamTimeout

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


Answer = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]  # -> keep the connection open


class ScriptedServer:
    """Reads whole requests (head and Content-Length body) and lets ``answer`` write raw bytes back."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []

    async def __aenter__(self) -> ScriptedServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                request = head + (await reader.readexactly(length) if length else b"")
                self.requests.append(request)
                if not await self.answer(request, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def pool(self, **kw: object) -> Pool:
        args: dict = {"limit": 8, "connect_timeout_s": 2.0, "read_timeout_s": 2.0, **kw}
        return Pool(f"http://127.0.0.1:{self.port}/v1", **args)


def _ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n" % (len(body), extra) + body


async def test_content_length_answers_reuse_one_connection_and_carry_the_pool_headers() -> None:
    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(_ok(b'{"n": %d}' % len(request), b"x-policy: p1\r\n"))
        return True

    async with ScriptedServer(answer) as srv:
        pool = srv.pool(headers={"Authorization": "Bearer k", "content-type": "application/json"})
        for _ in range(3):
            async with await pool.request("POST", "/chat/completions", b'{"a":1}') as resp:
                assert resp.status == 200 and resp.headers["X-Policy"] == "p1"
                assert (await resp.read()).startswith(b'{"n": ')
        pool.close()
    assert srv.connections == 1
    first = srv.requests[0]
    assert first.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"\r\nhost: 127.0.0.1:%d\r\n" % srv.port in first
    assert b"\r\nauthorization: Bearer k\r\n" in first and first.endswith(b'\r\n\r\n{"a":1}')


async def test_per_request_headers_replace_the_pools_and_lines_cannot_be_injected() -> None:
    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(_ok(b"{}"))
        return True

    async with ScriptedServer(answer) as srv:
        pool = srv.pool(headers={"content-type": "application/json"})
        resp = await pool.request("POST", "/embeddings", b"x", {"Content-Type": "text/plain"})
        await resp.read()
        resp.release()
        with pytest.raises(ValueError):
            await pool.request("POST", "/x", b"x", {"user-agent": "a\r\nx-evil: 1"})
        pool.close()
    assert b"content-type: text/plain\r\n" in srv.requests[0]
    assert b"application/json" not in srv.requests[0]
    assert len(srv.requests) == 1


async def test_chunked_and_close_delimited_bodies_arrive_whole() -> None:
    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        if b"/chunked" in request:
            w.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            for part in (b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"):
                w.write(b"%x\r\n%s\r\n" % (len(part), part))
                await w.drain()
                await asyncio.sleep(0.01)
            w.write(b"0\r\n\r\n")
            return True
        w.write(b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n" + b"y" * 70_000)
        return False  # the close ends the body

    async with ScriptedServer(answer) as srv:
        pool = srv.pool()
        resp = await pool.request("POST", "/chunked", b"{}")
        pieces = [p async for p in resp.iter_any()]
        resp.release()
        assert b"".join(pieces) == b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n" and len(pieces) >= 2
        resp = await pool.request("GET", "/old")
        assert await resp.read() == b"y" * 70_000
        resp.release()
        pool.close()


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "deflate-raw"])
async def test_encoded_bodies_are_decoded(encoding: str) -> None:
    plain = b'{"choices": []}' * 200
    if encoding == "gzip":
        body = gzip.compress(plain)
    elif encoding == "deflate":
        body = zlib.compress(plain)
    else:
        c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        body = c.compress(plain) + c.flush()

    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        name = encoding.split("-")[0].encode()
        w.write(b"HTTP/1.1 200 OK\r\ncontent-encoding: %s\r\ncontent-length: %d\r\n\r\n" % (name, len(body)))
        for i in range(0, len(body), 7):  # in small writes: the decoder must carry state across reads
            w.write(body[i : i + 7])
        return True

    async with ScriptedServer(answer) as srv:
        pool = srv.pool()
        resp = await pool.request("POST", "/x", b"{}")
        assert await resp.read() == plain
        resp.release()
        pool.close()
    assert b"accept-encoding" not in srv.requests[0].lower()


async def test_a_connection_closed_while_idle_is_replaced_and_the_request_sent_once_more() -> None:
    served: list[int] = []

    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        served.append(1)
        if len(served) == 2:  # the second request: the backend drops it unanswered, as if it had timed out
            w.transport.abort()
            return False
        w.write(_ok(b"{}"))
        return True

    async with ScriptedServer(answer) as srv:
        pool = srv.pool()
        for _ in range(2):
            resp = await pool.request("POST", "/x", b"{}")
            assert resp.status == 200 and await resp.read() == b"{}"
            resp.release()
        pool.close()
    assert srv.connections == 2 and len(srv.requests) == 3


async def test_a_fresh_connection_closed_before_the_answer_is_an_error_not_a_retry() -> None:
    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        w.transport.abort()
        return False

    async with ScriptedServer(answer) as srv:
        pool = srv.pool()
        with pytest.raises(UpstreamBroken):
            await pool.request("POST", "/x", b"{}")
        pool.close()
    assert len(srv.requests) == 1


async def test_a_body_cut_short_is_broken_and_the_connection_not_reused() -> None:
    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n" + b"z" * 40)
        await w.drain()
        return False

    async with ScriptedServer(answer) as srv:
        pool = srv.pool()
        resp = await pool.request("POST", "/x", b"{}")
        with pytest.raises(UpstreamBroken):
            await resp.read()
        resp.release()
        pool.close()


async def test_silence_is_a_timeout_and_a_closed_port_a_connect_error() -> None:
    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(5)
        return False

    async with ScriptedServer(answer) as srv:
        pool = srv.pool(read_timeout_s=0.2)
        with pytest.raises(UpstreamTimeout):
            await pool.request("POST", "/x", b"{}")
        assert isinstance(UpstreamTimeout("x"), TimeoutError)
        pool.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = Pool(f"http://127.0.0.1:{port}/v1", limit=2, connect_timeout_s=1.0, read_timeout_s=1.0)
    with pytest.raises(UpstreamConnectError, match="ConnectionRefused"):
        await dead.request("POST", "/x", b"{}")
    # the failed attempt freed its slot: both slots are still there
    for _ in range(3):
        with pytest.raises(UpstreamConnectError):
            await asyncio.wait_for(dead.request("POST", "/x", b"{}"), 2)


async def test_a_slow_reader_pauses_the_backend_and_still_gets_every_byte() -> None:
    size = 4 * 1024 * 1024

    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        w.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size)
        for i in range(size // 65536):
            w.write(bytes([i % 251]) * 65536)
            await w.drain()
        return True

    async with ScriptedServer(answer) as srv:
        pool = srv.pool()
        resp = await pool.request("GET", "/big")  # read whole: nothing holds the backend back
        whole = await resp.read()
        resp.release()
        resp = await pool.request("GET", "/big")
        got, most = 0, 0
        digest = zlib.crc32(b"")
        async for piece in resp.iter_any():
            got += len(piece)
            most = max(most, len(piece))
            digest = zlib.crc32(piece, digest)
            await asyncio.sleep(0.002)
        resp.release()
        pool.close()
    want = zlib.crc32(b"".join(bytes([i % 251]) * 65536 for i in range(size // 65536)))
    assert got == size and digest == want and len(whole) == size and zlib.crc32(whole) == want
    assert most < 2 * 1024 * 1024  # the connection stopped reading: nothing near the whole body was buffered


async def test_an_unread_answer_closes_its_connection_and_interim_answers_are_skipped() -> None:
    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        if b"/slow" in request:  # the head and half the body, the rest later
            w.write(b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n0123456789")
            await w.drain()
            await asyncio.sleep(0.3)
            w.write(b"0123456789")
            return True
        if b"/hints" in request:
            w.write(b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n")
        w.write(_ok(b"0123456789", b"x-final: 1\r\n"))
        return True

    async with ScriptedServer(answer) as srv:
        pool = srv.pool()
        resp = await pool.request("POST", "/hints", b"{}")
        assert resp.status == 200 and resp.headers.get("x-final") == "1" and "link" not in resp.headers
        assert await resp.read() == b"0123456789"
        resp.release()
        resp = await pool.request("POST", "/slow", b"{}")
        resp.release()  # released before its body ended: the connection cannot carry another request
        resp = await pool.request("POST", "/x", b"{}")
        assert await resp.read() == b"0123456789"
        resp.release()
        pool.close()
    assert srv.connections == 2


async def test_the_connection_limit_queues_requests_beyond_it() -> None:
    active, most = 0, 0

    async def answer(request: bytes, w: asyncio.StreamWriter) -> bool:
        nonlocal active, most
        active += 1
        most = max(most, active)
        await asyncio.sleep(0.02)
        active -= 1
        w.write(_ok(b"{}"))
        return True

    async with ScriptedServer(answer) as srv:
        pool = srv.pool(limit=3)

        async def call() -> bytes:
            async with await pool.request("POST", "/x", b"{}") as resp:
                return await resp.read()

        assert await asyncio.gather(*(call() for _ in range(12))) == [b"{}"] * 12
        pool.close()
    assert most <= 3 and srv.connections <= 3
