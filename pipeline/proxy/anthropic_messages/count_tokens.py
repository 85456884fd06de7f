"""Anthropic messages: ``POST /v1/messages/count_tokens``, counted by the backend's own tokenizer.

The request is translated to chat as ``/v1/messages`` translates it, and the backend serving its model
counts the prompt it would read from that chat (vLLM's ``POST /tokenize`` at the server root, which
``sluice serve-model`` also answers): ``{"input_tokens": N}``. Nothing is recorded: a count is not a
step. A backend without ``/tokenize`` is a 404 that says so; no count is ever estimated.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.anthropic_messages.protocol import CountTokensRequest
from pipeline.proxy.anthropic_messages.translate import to_chat
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.forwarding.upstream import read_error
from pipeline.proxy.surfaces.context import call_context
from pipeline.proxy.surfaces.request import read_request
from pipeline.proxy.surfaces.responses import json_response


async def count_tokens(request: Request) -> Response:
    state = request.app.state.sluice
    call_context(request)
    req = await read_request(request, CountTokensRequest, "anthropic", state)
    backend = state.backend_for(req.model)
    chat = to_chat(req, max_tokens=1)
    ask: dict[str, Any] = {"model": req.model, "messages": chat["messages"], "add_generation_prompt": True}
    if chat.get("tools"):
        ask["tools"] = chat["tools"]
    resp = await state.upstreams.request(backend, "POST", "/tokenize", json.dumps(ask).encode(), at_root=True)
    async with resp:
        raw = await resp.read()
        status = resp.status
    if status in (404, 405):
        raise ApiError(
            404,
            f"backend {backend.name!r} cannot count tokens: it has no POST /tokenize "
            "(vLLM and sluice serve-model have one)",
        )
    if status >= 400:
        raise read_error(status, raw, backend.name)
    try:
        count = json.loads(raw)["count"]
    except (ValueError, KeyError, TypeError):
        count = None
    if not isinstance(count, int) or count < 0:
        raise ApiError(
            502, f"backend {backend.name!r} answered /tokenize without a count", type="upstream_error"
        )
    return json_response(json.dumps({"input_tokens": count}).encode())
