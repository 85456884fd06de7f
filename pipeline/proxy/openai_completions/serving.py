"""OpenAI completions: serve ``/v1/completions`` through the OpenAI serving path and ``CompletionCall``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.openai_completions.call import CompletionCall, prompt_text
from pipeline.proxy.openai_completions.protocol import CompletionRequest
from pipeline.proxy.surfaces.context import CallContext
from pipeline.proxy.surfaces.openai_serving import serve_openai_step


def _open(state: Any, ctx: CallContext, req: CompletionRequest, backend: BackendConfig) -> CompletionCall:
    step = state.recorder.begin(
        ctx,
        req,
        backend=backend,
        operation="text_completion",
        provider="openai",
        prompt_text=prompt_text(req.prompt),
    )
    return CompletionCall(state.upstreams, state.metrics, state.recorder, step, req)


async def create_completion(request: Request) -> Response:
    return await serve_openai_step(request, CompletionRequest, _open, "completions")
