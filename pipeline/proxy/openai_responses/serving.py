"""OpenAI responses: serve ``/v1/responses`` (translate to chat, record through ``ChatCall``, back).

``previous_response_id`` is answered from the tenant's response chains (``chains``): the conversation up
to that response goes to the backend in front of the new input, and the step joins the trajectory of the
response it continues (while the linker still holds that trajectory; otherwise history linking decides).
An unknown, expired or other tenant's id is a 400 ``previous_response_not_found``. Each response served
with ``store`` not false is kept for continuations once it completed.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.forwarding.chat_call import ChatCall
from pipeline.proxy.openai_responses.protocol import ResponsesRequest
from pipeline.proxy.openai_responses.stream import ResponsesStreamWriter
from pipeline.proxy.openai_responses.translate import (
    item_messages,
    previous_not_found,
    reply_message,
    to_chat,
    to_response,
)
from pipeline.proxy.surfaces.context import CallContext
from pipeline.proxy.surfaces.translating_serving import TranslatingSurface, serve_translated
from sluice.events import new_id


class ResponsesExchange:
    def __init__(self, state: Any, ctx: CallContext, req: ResponsesRequest) -> None:
        self.state, self.ctx, self.req, self.parent = state, ctx, req, req.previous_response_id
        self.history: list[dict[str, Any]] | None = None
        if self.parent is not None:
            now = time.monotonic()
            found = state.response_chains.history(ctx.caller.tenant, self.parent, now)
            if found is None:
                raise previous_not_found(self.parent)
            self.history = found.messages
            if ctx.explicit_id is None and state.recorder.extendable(
                ctx.caller.tenant, found.trajectory_id, now
            ):
                ctx.explicit_id, ctx.explicit_by = found.trajectory_id, "response"
        self.keep = req.store is not False and state.config.proxy.response_chains.max_responses > 0

    def chat(self) -> dict[str, Any]:
        chat = to_chat(self.req, self.history)
        self.rid = "resp_" + new_id()
        return chat

    def response(self, call: ChatCall, answer: dict[str, Any]) -> dict[str, Any]:
        stored = self.keep and self._keep(call, reply_message(answer))
        return to_response(answer, self.req, rid=self.rid, stored=stored)

    def writer(self, call: ChatCall) -> _KeepingWriter:
        return _KeepingWriter(self, call, ResponsesStreamWriter(self.req, self.rid, stored=self.keep))

    def _keep(self, call: ChatCall, reply: dict[str, Any] | None) -> bool:
        """Remember a completed response for continuations: its input items and its reply."""
        if call.error is not None or reply is None:
            return False
        return self.state.response_chains.put(
            self.ctx.caller.tenant,
            self.rid,
            self.parent,
            [*item_messages(self.req), reply],
            call.step.trajectory_id,
            self.ctx.caller.subject_ids,
            time.monotonic(),
        )


class _KeepingWriter:
    """The responses stream writer, keeping the response for continuations before its final event."""

    def __init__(self, exchange: ResponsesExchange, call: ChatCall, writer: ResponsesStreamWriter) -> None:
        self.exchange, self.call, self.writer = exchange, call, writer

    def feed(self, chunk: dict[str, Any]) -> list[bytes]:
        return self.writer.feed(chunk)

    def end(self, error: str | None) -> list[bytes]:
        if self.exchange.keep:  # before the final event: a continuation sent right after it must find it
            self.writer.stored = self.exchange._keep(self.call, self.writer.reply())
        return self.writer.end(error)


RESPONSES = TranslatingSurface(ResponsesRequest, "responses", "responses", "openai", ResponsesExchange)


async def create_response(request: Request) -> Response:
    return await serve_translated(request, RESPONSES)
