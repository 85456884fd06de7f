"""Forwarding: one pool of kept-alive connections per backend (``http_client.Pool``), each with its credential.

The agent's credentials never travel upstream; the backend's key comes from config or its env var.
Connection failures and timeouts become ``ApiError`` 502/504 with the backend named (never its key).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.forwarding.http_client import Pool
from pipeline.proxy.forwarding.upstream_response import UpstreamError, UpstreamResponse

log = logging.getLogger(__name__)


class Upstreams:
    def __init__(self, backends: list[BackendConfig]) -> None:
        self.backends = backends
        self._pools: dict[str, Pool] = {}
        self._roots: dict[str, Pool] = {}  # the server's root (the base URL without its /v1), made on use

    async def start(self) -> None:
        for b in self.backends:
            self._pools[b.name] = self._pool(b, b.base_url)

    @staticmethod
    def _pool(backend: BackendConfig, base_url: str) -> Pool:
        headers = {"content-type": "application/json"}
        cred = backend.credential()
        if cred:
            headers["authorization"] = f"Bearer {cred}"
        return Pool(
            base_url,
            limit=backend.max_connections,
            connect_timeout_s=min(10.0, backend.timeout_s),
            read_timeout_s=backend.timeout_s,
            keepalive_s=30.0,
            headers=headers,
        )

    async def close(self) -> None:
        for pool in (*self._pools.values(), *self._roots.values()):
            pool.close()
        self._pools.clear()
        self._roots.clear()

    async def post(
        self, backend: BackendConfig, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> UpstreamResponse:
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
    ) -> UpstreamResponse:
        """Any call to ``backend``: ``path`` below its base URL, or below the server's root with
        ``at_root`` (the base URL without its ``/v1``: vLLM's ``/tokenize``). ``headers`` add to or replace
        the pool's, never its credential. The caller reads (and releases) the response."""
        if at_root:
            pool = self._roots.get(backend.name)
            if pool is None:
                pool = self._roots[backend.name] = self._pool(backend, backend.base_url.removesuffix("/v1"))
        else:
            pool = self._pools[backend.name]
        if headers and "authorization" in (h.lower() for h in headers):
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        # the path and query as the agent sent them: already percent-encoded, not to be encoded again
        target = path + (f"?{query}" if query else "")
        try:
            return await pool.request(method, target, body, headers)
        except TimeoutError:
            raise ApiError(
                504, f"backend {backend.name!r} did not answer in time", type="upstream_error"
            ) from None
        except UpstreamError as err:
            raise ApiError(
                502, f"backend {backend.name!r} is unreachable: {err}", type="upstream_error"
            ) from None
        except ValueError as err:  # a header the agent sent that cannot go on a request line
            raise ApiError(400, str(err), type="invalid_request_error") from None

    async def get_json(self, backend: BackendConfig, path: str, timeout_s: float = 5.0) -> Any:
        """A small JSON document from ``backend`` (its model list); any failure raises."""

        async def fetch() -> Any:
            async with await self._pools[backend.name].request("GET", path) as resp:
                data = await resp.read()
                if resp.status >= 400:
                    raise UpstreamError(f"HTTP {resp.status}")
                return json.loads(data)

        return await asyncio.wait_for(fetch(), timeout_s)


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
