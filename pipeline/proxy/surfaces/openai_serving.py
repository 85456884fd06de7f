"""Surfaces: the one serving path of the OpenAI surfaces that relay the backend's own answer.

``/v1/chat/completions`` and ``/v1/completions`` differ only in their request model and how they open
their step: validate, open the recorded call, answer JSON (the backend's bytes when nothing was
stripped) or relay the SSE stream as it arrives (one write per network read).

A backend stream that breaks before its end ends the agent's stream with an OpenAI-format error event
(``data: {"error": {...}}``), which the OpenAI SDKs raise, instead of ``[DONE]``: a stream that merely
stops reads as a complete answer to them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.forwarding.backend_call import BackendCall
from pipeline.proxy.surfaces.context import CallContext, call_context
from pipeline.proxy.surfaces.request import OpenModel, read_request
from pipeline.proxy.surfaces.responses import SseResponse, json_response
from pipeline.proxy.surfaces.sse import DONE, encode_data

# (state, call context, typed request, backend) -> the recorded call
OpenCall = Callable[[Any, CallContext, Any, BackendConfig], BackendCall]


async def serve_openai_step(
    request: Request, request_model: type[OpenModel], open_call: OpenCall, surface: str
) -> Response:
    state = request.app.state.sluice
    ctx = call_context(request)
    req: Any = await read_request(request, request_model, surface, state)
    backend = state.backend_for(req.model)
    call = open_call(state, ctx, req, backend)
    if not call.step.stream:
        answer, same = await call.answer()
        body = same if same is not None else json.dumps(answer).encode()
        return json_response(body, headers=call.step.headers())
    upstream = await call.open_stream()
    return SseResponse(relay_openai_stream(call, upstream), headers=call.step.headers())


async def relay_openai_stream(call: BackendCall, upstream: Any) -> AsyncIterator[bytes]:
    """Raw bytes of each chunk, re-encoded only when something the recording asked for was stripped."""
    keep_chunk = call.keep_chunk
    async with contextlib.aclosing(call.batches(upstream)) as batches:
        async for batch in batches:
            out = []
            for raw, chunk in batch:
                keep = keep_chunk(chunk)
                if keep is None:
                    out.append(raw)
                elif keep:
                    out.append(encode_data(chunk))
            if out:
                yield b"".join(out)
    if call.error is None:
        yield DONE
    else:  # a broken stream ends on an error event, not [DONE]: the OpenAI SDKs raise it as an APIError
        yield encode_data(
            {"error": {"message": call.error, "type": "upstream_error", "param": None, "code": None}}
        )
