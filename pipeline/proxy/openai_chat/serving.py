"""Serving ``/v1/chat/completions``: the shared OpenAI serving path with the chat request model and ``ChatStep``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.chat_step import ChatStep
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.openai_serving import serve_openai_step


async def create_chat_completion(request: Request) -> Response:
    return await serve_openai_step(request, ChatCompletionRequest, ChatStep, "chat")
