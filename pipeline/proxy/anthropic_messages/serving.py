"""Anthropic messages: serve ``/v1/messages`` (translate to chat, record through ``ChatCall``, back)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.anthropic_messages.protocol import MessagesRequest
from pipeline.proxy.anthropic_messages.stream import AnthropicStreamWriter
from pipeline.proxy.anthropic_messages.translate import to_anthropic, to_chat
from pipeline.proxy.forwarding.chat_call import ChatCall
from pipeline.proxy.surfaces.context import CallContext
from pipeline.proxy.surfaces.translating_serving import TranslatingSurface, serve_translated


class MessagesExchange:
    def __init__(self, state: Any, ctx: CallContext, req: MessagesRequest) -> None:
        self.req, self.model = req, req.model

    def chat(self) -> dict[str, Any]:
        return to_chat(self.req)

    def response(self, call: ChatCall, answer: dict[str, Any]) -> dict[str, Any]:
        return to_anthropic(answer, self.model)

    def writer(self, call: ChatCall) -> AnthropicStreamWriter:
        return AnthropicStreamWriter(self.model)


MESSAGES = TranslatingSurface(MessagesRequest, "anthropic", "messages", "anthropic", MessagesExchange)


async def create_message(request: Request) -> Response:
    return await serve_translated(request, MESSAGES)
