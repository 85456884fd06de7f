"""The one serving path of the OpenAI-shaped surfaces that relay the backend's own answer.

``/v1/chat/completions`` and ``/v1/completions`` differ only in their request model and how they open
their step: validate, open the recorded call, answer JSON (the backend's bytes when nothing was
stripped) or relay the SSE stream chunk by chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.context import CallContext, call_context
from pipeline.proxy.http_io import read_json
from pipeline.proxy.protocol_base import OpenModel, validate_request
from pipeline.proxy.recorded_call import RecordedCall
from pipeline.proxy.recorder import step_headers
from pipeline.proxy.responses import SseResponse, json_response
from pipeline.proxy.stream_relay import relay_openai_stream

# (state, call context, typed request, request body, raw body bytes, backend) -> the recorded call
OpenCall = Callable[[Any, CallContext, Any, dict[str, Any], bytes | None, BackendConfig], RecordedCall]


async def serve_openai_step(
    request: Request, request_model: type[OpenModel], open_call: OpenCall, surface: str
) -> Response:
    state = request.app.state.sluice
    ctx = call_context(request)
    raw, body = await read_json(request, state.config.proxy.max_body_bytes)
    req: Any = validate_request(request_model, body, surface, state.metrics)
    backend = state.backend_for(req.model)
    rc = open_call(state, ctx, req, body, raw, backend)
    headers = step_headers(rc.step)
    if not rc.stream:
        answer, same = await rc.answer()
        body = same if same is not None else json.dumps(answer).encode()
        return json_response(body, headers={**headers, **rc.served_headers()})
    upstream = await rc.open_stream()
    return SseResponse(relay_openai_stream(rc, upstream), headers={**headers, **rc.served_headers()})
