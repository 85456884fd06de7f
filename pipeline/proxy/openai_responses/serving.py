"""Serving OpenAI ``/v1/responses``: translate to chat, record through ``ChatStep``, translate back.

``previous_response_id`` is answered from the tenant's response chains (``chains``): the conversation up
to that response goes to the backend in front of the new input, and the step joins the trajectory of the
response it continues (while the linker still holds that trajectory; otherwise history linking decides).
An unknown, expired or other tenant's id is a 400 ``previous_response_not_found``. Each response served
with ``store`` not false is kept for continuations once it completed.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.backend_call import metadata_task_id
from pipeline.proxy.chat_step import ChatStep
from pipeline.proxy.context import CallContext, call_context
from pipeline.proxy.http_io import read_json
from pipeline.proxy.openai_responses.protocol import ResponsesRequest
from pipeline.proxy.openai_responses.stream import ResponsesStreamWriter
from pipeline.proxy.openai_responses.translate import (
    item_messages,
    previous_not_found,
    reply_message,
    to_chat,
    to_response,
)
from pipeline.proxy.protocol_base import validate_request
from pipeline.proxy.recorder import step_headers
from pipeline.proxy.responses import SseResponse, json_response
from sluice.events import new_id


async def create_response(request: Request) -> Response:
    state = request.app.state.sluice
    ctx = call_context(request)
    _, body = await read_json(request, state.config.proxy.max_body_bytes)
    req = validate_request(ResponsesRequest, body, "responses", state.metrics)
    backend = state.backend_for(req.model)
    history = None
    if req.previous_response_id is not None:
        now = time.monotonic()
        found = state.response_chains.history(ctx.caller.tenant, req.previous_response_id, now)
        if found is None:
            raise previous_not_found(req.previous_response_id)
        history = found.messages
        if ctx.explicit_id is None and state.linker.extendable(ctx.caller.tenant, found.trajectory_id, now):
            ctx.explicit_id, ctx.explicit_by = found.trajectory_id, "response"
    chat = to_chat(body, history)
    step = ChatStep(
        state,
        ctx,
        chat,
        None,
        backend=backend,
        task_id=metadata_task_id(body),
        operation="responses",
        provider="openai",
    )
    headers = step_headers(step.record)
    rid = "resp_" + new_id()
    keep = req.store is not False and state.config.proxy.response_chains.max_responses > 0
    if not step.stream:
        answer, _ = await step.call()
        stored = keep and _keep(state, ctx, step, rid, req.previous_response_id, body, reply_message(answer))
        return json_response(
            json.dumps(to_response(answer, body, rid=rid, stored=stored)).encode(), headers=headers
        )
    upstream = await step.open_stream()
    return SseResponse(_stream(step, upstream, body, rid, keep), headers=headers)


def _keep(
    state: Any,
    ctx: CallContext,
    step: ChatStep,
    rid: str,
    parent: str | None,
    body: dict[str, Any],
    reply: dict[str, Any] | None,
) -> bool:
    """Remember a completed response for continuations: its input items and its reply."""
    if step.record.error is not None or reply is None:
        return False
    return state.response_chains.put(
        ctx.caller.tenant,
        rid,
        parent,
        [*item_messages(body), reply],
        step.record.plan.trajectory_id,
        ctx.caller.subject_ids,
        time.monotonic(),
    )


async def _stream(
    step: ChatStep, upstream: Any, body: dict[str, Any], rid: str, keep: bool
) -> AsyncIterator[bytes]:
    writer = ResponsesStreamWriter(body, rid, stored=keep)
    async with contextlib.aclosing(step.chunk_batches(upstream)) as batches:
        async for batch in batches:
            out: list[bytes] = []
            for _, chunk in batch:
                if "choices" in chunk or "usage" in chunk:
                    out += writer.feed(chunk)
            if out:
                yield b"".join(out)
    if keep:  # before the final event: a continuation sent right after it must find this response
        writer.stored = _keep(
            step.state, step.ctx, step, rid, body.get("previous_response_id"), body, writer.reply()
        )
    yield b"".join(writer.end(step.record.error))
