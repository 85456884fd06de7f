"""Serving ``/v1/completions``: the shared OpenAI serving path with the completion request model and ``CompletionStep``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.openai_completions.protocol import CompletionRequest
from pipeline.proxy.openai_completions.step import CompletionStep
from pipeline.proxy.openai_serving import serve_openai_step


async def create_completion(request: Request) -> Response:
    return await serve_openai_step(request, CompletionRequest, CompletionStep, "completions")
