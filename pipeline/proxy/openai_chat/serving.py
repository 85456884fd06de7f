"""OpenAI chat: serve ``/v1/chat/completions`` through the OpenAI serving path and ``ChatCall``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.forwarding.chat_call import ChatCall, open_chat_call
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.surfaces.context import CallContext
from pipeline.proxy.surfaces.openai_serving import serve_openai_step


def _open(state: Any, ctx: CallContext, req: ChatCompletionRequest, backend: BackendConfig) -> ChatCall:
    return open_chat_call(state, ctx, req, backend, operation="chat", provider="openai")


async def create_chat_completion(request: Request) -> Response:
    return await serve_openai_step(request, ChatCompletionRequest, _open, "chat")
