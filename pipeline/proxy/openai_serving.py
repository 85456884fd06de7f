"""The one serving path of the OpenAI-shaped surfaces that relay the backend's own answer.

``/v1/chat/completions`` and ``/v1/completions`` differ only in their request model and step class:
validate, call the backend through the step, answer JSON (the backend's bytes when nothing was stripped)
or relay the SSE stream chunk by chunk.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.context import call_context
from pipeline.proxy.http_io import read_json
from pipeline.proxy.protocol_base import validate_request
from pipeline.proxy.recorder import step_headers
from pipeline.proxy.responses import SseResponse, json_response
from pipeline.proxy.stream_relay import relay_openai_stream


async def serve_openai_step(
    request: Request, request_model: type, step_class: type, surface: str
) -> Response:
    state = request.app.state.sluice
    ctx = call_context(request)
    raw, body = await read_json(request, state.config.proxy.max_body_bytes)
    req: Any = validate_request(request_model, body, surface, state.metrics)
    backend = state.backend_for(req.model)
    step = step_class(state, ctx, body, raw, backend=backend)
    headers = step_headers(step.record)
    if not step.stream:
        answer, same = await step.call()
        return json_response(same if same is not None else json.dumps(answer).encode(), headers=headers)
    upstream = await step.open_stream()
    return SseResponse(relay_openai_stream(step, upstream), headers=headers)
