"""Forwarding: the backends' pooled aiohttp sessions, each with its own credential.

The agent's credentials never travel upstream; the backend's key comes from config or its env var.
Connection failures and timeouts become ``ApiError`` 502/504 with the backend named (never its key).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import aiohttp
import yarl

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.exceptions import ApiError

log = logging.getLogger(__name__)


class Upstreams:
    def __init__(self, backends: list[BackendConfig]) -> None:
        self.backends = backends
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        self._headers: dict[str, dict[str, str]] = {}

    async def start(self) -> None:
        for b in self.backends:
            connector = aiohttp.TCPConnector(limit=b.max_connections, ttl_dns_cache=300, keepalive_timeout=30)
            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=min(10.0, b.timeout_s), sock_read=b.timeout_s
            )
            headers = {"content-type": "application/json"}
            cred = b.credential()
            if cred:
                headers["authorization"] = f"Bearer {cred}"
            self._headers[b.name] = headers
            # default headers on the session: per-request header dicts cost a multidict merge per call
            self._sessions[b.name] = aiohttp.ClientSession(
                connector=connector, timeout=timeout, headers=headers, raise_for_status=False
            )

    async def close(self) -> None:
        for s in self._sessions.values():
            await s.close()
        self._sessions.clear()

    async def post(
        self, backend: BackendConfig, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> aiohttp.ClientResponse:
        """Send a JSON body; the caller reads (and releases) the response."""
        return await self.request(backend, "POST", path, body, headers)

    async def request(
        self,
        backend: BackendConfig,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        query: str = "",
        at_root: bool = False,
    ) -> aiohttp.ClientResponse:
        """Any call to ``backend``: ``path`` below its base URL, or below the server's root with
        ``at_root`` (the base URL without its ``/v1``: vLLM's ``/tokenize``). ``headers`` add to or replace
        the session's, never its credential. The caller reads (and releases) the response."""
        session = self._sessions[backend.name]
        base = backend.base_url.removesuffix("/v1") if at_root else backend.base_url
        # the path and query as the agent sent them: already percent-encoded, not to be encoded again
        url = yarl.URL(base + path + (f"?{query}" if query else ""), encoded=True)
        try:
            return await session.request(method, url, data=body, headers=headers)
        except (TimeoutError, aiohttp.ServerTimeoutError):
            raise ApiError(
                504, f"backend {backend.name!r} did not answer in time", type="upstream_error"
            ) from None
        except aiohttp.ClientError as err:
            raise ApiError(
                502, f"backend {backend.name!r} is unreachable: {type(err).__name__}", type="upstream_error"
            ) from None

    async def get_json(self, backend: BackendConfig, path: str, timeout_s: float = 5.0) -> Any:
        session = self._sessions[backend.name]
        async with session.get(
            backend.base_url + path, timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as resp:
            resp.raise_for_status()
            return await resp.json(content_type=None)


def read_error(status: int, body: bytes, backend: str) -> ApiError:
    """An upstream error answer as an ``ApiError`` carrying the upstream's own body when it is OpenAI-shaped."""
    message = f"backend {backend!r} answered HTTP {status}"
    err_type, code, param = None, None, None
    passthrough = None
    try:
        data = json.loads(body)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and "message" in err:
            message = str(err.get("message"))
            err_type, code, param = err.get("type"), err.get("code"), err.get("param")
            passthrough = body
        elif isinstance(err, str):
            message = err
        elif isinstance(data, dict) and isinstance(data.get("message"), str):
            message = data["message"]
    except (ValueError, UnicodeDecodeError):
        if body:
            message += ": " + body[:200].decode("utf-8", "replace")
    return ApiError(
        status,
        message,
        type=err_type if isinstance(err_type, str) else None,
        param=param if isinstance(param, str) else None,
        code=str(code) if code is not None else None,
        upstream_body=passthrough,
    )
