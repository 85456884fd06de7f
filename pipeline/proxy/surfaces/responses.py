"""Surfaces: the JSON response and a lean pass-through SSE response.

``SseResponse`` writes each item of an async iterator as soon as it is produced (no buffering) and always
closes the iterator, also when the client goes away, so the step it records is finished either way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send


def json_response(body: bytes, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type="application/json", headers=headers)


class SseResponse(Response):
    media_type = "text/event-stream"

    def __init__(self, items: AsyncIterator[bytes], headers: Mapping[str, str] | None = None) -> None:
        self.items = items
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no", **(headers or {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def write() -> None:
            await send(
                {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
            )
            async for data in self.items:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        writer = asyncio.ensure_future(write())

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            writer.cancel()  # stop reading the backend; the step is recorded as cut short

        watcher = asyncio.ensure_future(watch())
        try:
            await writer
        except (asyncio.CancelledError, OSError):
            if not writer.cancelled():
                raise
        finally:
            watcher.cancel()
            if not writer.done():
                writer.cancel()
            await self.items.aclose()  # type: ignore[attr-defined]
