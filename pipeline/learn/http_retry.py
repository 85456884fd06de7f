"""POSTs to the proxy's trajectory API that survive a dropped keep-alive connection.

A client that reuses an idle connection the server has just closed gets a transport error (``ReadError``,
``RemoteProtocolError``) before anything was processed; a busy machine makes that race common. The calls
here are safe to repeat (rewards carry an idempotency ``id``; a second end of a trajectory changes nothing),
so they are retried a few times with a short backoff instead of failing the run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx


async def post_retrying(
    client: httpx.AsyncClient, url: str, *, attempts: int = 4, backoff_s: float = 0.25, **kwargs: Any
) -> httpx.Response:
    """``client.post(url, **kwargs)``, retried on transport errors; the last error is raised."""
    for n in range(attempts):
        try:
            return await client.post(url, **kwargs)
        except httpx.TransportError:
            if n == attempts - 1:
                raise
            await asyncio.sleep(backoff_s * (2**n))
    raise AssertionError("unreachable")
