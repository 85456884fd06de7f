"""Surfaces: other spellings of the proxy's paths, rewritten to the canonical ``/v1/...`` before routing.

Clients reach the same API under several paths; each is served, not refused:

- no ``/v1``: ``/chat/completions``, ``/messages``, ``/responses``, ``/models``, ``/embeddings`` … (a
  client whose base URL was given without ``/v1``);
- Azure OpenAI's: ``/openai/deployments/{deployment}/chat/completions?api-version=…`` (the Azure SDK
  and REST callers; the deployment is the model when the body names none), ``/openai/v1/…`` and
  ``/openai/…``; the ``api-version`` query is Azure's and is dropped;
- one trailing slash (``/v1/chat/completions/``).

Each applies after an optional ``/t/{trajectory_id}`` prefix. A path that matches none is routed as sent.
The Azure SDK's ``api-key`` header is a key like ``x-api-key`` (``pipeline.proxy.surfaces.auth``).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# First path segments of the OpenAI/Anthropic API that a base URL without /v1 lands on.
ROOT_SURFACES = frozenset(
    {"chat", "completions", "responses", "messages", "models", "embeddings", "moderations", "audio", "files",
     "images", "batches", "uploads", "vector_stores", "fine_tuning"}
)  # fmt: skip
_PREFIX = re.compile(r"^(/t/[^/]+)(/.*)$")
_AZURE_DEPLOYMENT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)(?P<rest>/.+)$")
_AZURE_PLAIN = re.compile(r"^/openai(?:/v1)?(?P<rest>/.+)$")


def canonical_path(path: str) -> tuple[str, str | None]:
    """(the ``/v1/…`` path for ``path``, the Azure deployment it named or None); unchanged when no alias."""
    prefix, rest = "", path
    m = _PREFIX.match(path)
    if m is not None:
        prefix, rest = m.group(1), m.group(2)
    if rest.endswith("/") and not rest.endswith("//") and rest[:-1].count("/") >= 2:  # not "/v1/" itself
        rest = rest[:-1]
    deployment = None
    if (d := _AZURE_DEPLOYMENT.match(rest)) is not None:
        deployment, rest = d["deployment"], "/v1" + d["rest"]
    elif (a := _AZURE_PLAIN.match(rest)) is not None:
        rest = "/v1" + a["rest"]
    elif rest.split("/", 2)[1:2] and rest.split("/", 2)[1] in ROOT_SURFACES:
        rest = "/v1" + rest
    return prefix + rest, deployment


def _without_api_version(query: bytes) -> bytes:
    pairs = [
        (k, v) for k, v in parse_qsl(query.decode("latin-1"), keep_blank_values=True) if k != "api-version"
    ]
    return urlencode(pairs).encode("latin-1")


class PathAliases:
    """ASGI middleware: rewrites an aliased path to its canonical one; on an Azure deployment path, a JSON
    body with no ``model`` gets the deployment as its model."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app, self.max_body_bytes = app, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        canonical, deployment = canonical_path(path)
        if canonical == path:
            await self.app(scope, receive, send)
            return
        scope = {**scope, "path": canonical, "raw_path": canonical.encode()}
        if deployment is not None:
            scope["query_string"] = _without_api_version(scope.get("query_string", b""))
            if scope["method"] == "POST":
                receive = _with_model(receive, deployment, self.max_body_bytes)
        await self.app(scope, receive, send)


def _with_model(receive: Receive, deployment: str, max_bytes: int) -> Receive:
    """A ``receive`` whose body, a JSON object without ``model``, names ``deployment`` as its model; any
    other body (not JSON, compressed, already naming a model, past ``max_bytes``: the app refuses that
    one) passes unchanged."""
    done = False

    async def wrapped() -> Message:
        nonlocal done
        if done:
            return await receive()
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return message
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
            if sum(map(len, chunks)) > max_bytes:
                done = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": True}
        done = True
        body = b"".join(chunks)
        return {"type": "http.request", "body": _named(body, deployment), "more_body": False}

    return wrapped


def _named(body: bytes, deployment: str) -> bytes:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict) or data.get("model") is not None:
        return body
    data["model"] = deployment
    return json.dumps(data, ensure_ascii=False).encode()
