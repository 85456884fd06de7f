"""Surfaces: the one serving path of the surfaces translated to chat (Anthropic messages, responses).

Validate the request, let the surface's ``Exchange`` translate it to a chat-completions request, record
the call through ``ChatCall``, then translate the answer back: one JSON object, or the surface's SSE
events written from the chat chunks as they arrive. Each surface is a ``TranslatingSurface``: its request
model and names, and how to start an ``Exchange`` for one request.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.forwarding.chat_call import ChatCall, open_chat_call
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.recording.recorder import metadata_task_id
from pipeline.proxy.surfaces.context import CallContext, call_context
from pipeline.proxy.surfaces.request import OpenModel, read_request
from pipeline.proxy.surfaces.responses import SseResponse, json_response


class StreamWriter(Protocol):
    def feed(self, chunk: dict[str, Any]) -> list[bytes]: ...

    def end(self, error: str | None) -> list[bytes]: ...


class Exchange(Protocol):
    """One request of a translating surface, from its chat translation to the answer in its own format."""

    def chat(self) -> dict[str, Any]: ...

    def response(self, call: ChatCall, answer: dict[str, Any]) -> dict[str, Any]: ...

    def writer(self, call: ChatCall) -> StreamWriter: ...


@dataclass(frozen=True, slots=True)
class TranslatingSurface:
    request_model: type[OpenModel]
    surface: str  # the label of the unknown-fields metric
    operation: str  # GenAI operation name recorded in the step
    provider: str  # the API the agent spoke
    exchange: Callable[[Any, CallContext, Any], Exchange]  # (state, ctx, typed request)


def chat_request(chat: dict[str, Any]) -> ChatCompletionRequest:
    """The translated chat request, as the typed request the call and the recording read; 400 when it
    has no messages. Built from the proxy's own translation, so it is not validated again."""
    messages = chat.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages: must be a non-empty list of messages", param="messages")
    return ChatCompletionRequest.model_construct(**chat)


async def serve_translated(request: Request, surface: TranslatingSurface) -> Response:
    state = request.app.state.sluice
    ctx = call_context(request)
    req = await read_request(request, surface.request_model, surface.surface, state)
    backend = state.backend_for(req.model)  # type: ignore[attr-defined]
    exchange = surface.exchange(state, ctx, req)
    call = open_chat_call(
        state,
        ctx,
        chat_request(exchange.chat()),
        backend,
        operation=surface.operation,
        provider=surface.provider,
        task_id=metadata_task_id(req),
    )
    if not call.step.stream:
        answer, _ = await call.answer()
        body = json.dumps(exchange.response(call, answer)).encode()
        return json_response(body, headers=call.step.headers())
    upstream = await call.open_stream()
    return SseResponse(_stream(call, upstream, exchange.writer(call)), headers=call.step.headers())


async def _stream(call: ChatCall, upstream: Any, writer: StreamWriter) -> AsyncIterator[bytes]:
    async with contextlib.aclosing(call.batches(upstream)) as batches:
        async for batch in batches:
            out: list[bytes] = []
            for _, chunk in batch:
                if "choices" in chunk or "usage" in chunk:
                    out += writer.feed(chunk)
            if out:
                yield b"".join(out)
    yield b"".join(writer.end(call.error))
