"""Serving Anthropic ``/v1/messages``: translate to chat, record through ``ChatStep``, translate back."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.anthropic_messages.protocol import MessagesRequest
from pipeline.proxy.anthropic_messages.stream import AnthropicStreamWriter
from pipeline.proxy.anthropic_messages.translate import to_anthropic, to_chat
from pipeline.proxy.backend_call import metadata_task_id
from pipeline.proxy.chat_step import ChatStep
from pipeline.proxy.context import call_context
from pipeline.proxy.http_io import read_json
from pipeline.proxy.protocol_base import validate_request
from pipeline.proxy.recorder import step_headers
from pipeline.proxy.responses import SseResponse, json_response


async def create_message(request: Request) -> Response:
    state = request.app.state.sluice
    ctx = call_context(request)
    _, body = await read_json(request, state.config.proxy.max_body_bytes)
    req = validate_request(MessagesRequest, body, "anthropic", state.metrics)
    backend = state.backend_for(req.model)
    chat = to_chat(body)
    step = ChatStep(
        state,
        ctx,
        chat,
        None,
        backend=backend,
        task_id=metadata_task_id(body),
        operation="messages",
        provider="anthropic",
    )
    headers = step_headers(step.record)
    if not step.stream:
        answer, _ = await step.call()
        return json_response(json.dumps(to_anthropic(answer, req.model)).encode(), headers=headers)
    upstream = await step.open_stream()
    return SseResponse(_stream(step, upstream, req.model), headers=headers)


async def _stream(step: ChatStep, upstream: Any, model: str) -> AsyncIterator[bytes]:
    writer = AnthropicStreamWriter(model)
    async with contextlib.aclosing(step.chunk_batches(upstream)) as batches:
        async for batch in batches:
            out: list[bytes] = []
            for _, chunk in batch:
                if "choices" in chunk or "usage" in chunk:
                    out += writer.feed(chunk)
            if out:
                yield b"".join(out)
    yield b"".join(writer.end(step.record.error))
