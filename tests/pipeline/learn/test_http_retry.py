"""A POST whose connection the server drops before answering is retried; one that keeps failing raises."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from pipeline.learn.http_retry import post_retrying


async def _server(drops: int) -> tuple[asyncio.AbstractServer, int, list[int]]:
    seen: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        seen.append(1)
        if len(seen) <= drops:  # closed before any response byte, as a stale keep-alive connection is
            writer.close()
            return
        writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


def test_dropped_connections_are_retried() -> None:
    async def main() -> tuple[int, int]:
        server, port, seen = await _server(drops=2)
        async with server, httpx.AsyncClient() as client:
            resp = await post_retrying(client, f"http://127.0.0.1:{port}/x", json={}, backoff_s=0.01)
        return resp.status_code, len(seen)

    assert asyncio.run(main()) == (202, 3)


def test_a_server_that_never_answers_raises_after_the_attempts() -> None:
    async def main() -> None:
        server, port, seen = await _server(drops=100)
        async with server, httpx.AsyncClient() as client:
            with pytest.raises(httpx.TransportError):
                await post_retrying(client, f"http://127.0.0.1:{port}/x", attempts=3, backoff_s=0.01)
        assert len(seen) == 3

    asyncio.run(main())
