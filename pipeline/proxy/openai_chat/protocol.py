"""OpenAI chat: the request model of ``POST /v1/chat/completions``.

Fields in the order of the OpenAI API reference; extensions (vLLM sampling knobs, token ids) fenced
below. Unknown fields are kept and passed to the backend as they are. ``messages`` stay plain dicts here:
the proxy validates only the messages it records (the delta), see ``canonical.event_message``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pipeline.proxy.surfaces.request import OpenModel, Seed, TokenCount


class ChatCompletionRequest(OpenModel):
    messages: list[dict[str, Any]] = Field(min_length=1)
    model: str = Field(min_length=1)
    audio: dict[str, Any] | None = None
    frequency_penalty: float | None = None
    function_call: str | dict[str, Any] | None = None
    functions: list[dict[str, Any]] | None = None
    logit_bias: dict[str, float] | None = None
    logprobs: bool | None = None
    max_completion_tokens: TokenCount | None = None
    max_tokens: TokenCount | None = None
    metadata: dict[str, Any] | None = None
    modalities: list[str] | None = None
    n: int | None = Field(None, ge=1, le=128)
    parallel_tool_calls: bool | None = None
    prediction: dict[str, Any] | None = None
    presence_penalty: float | None = None
    reasoning_effort: str | None = None
    response_format: dict[str, Any] | None = None
    seed: Seed | None = None
    service_tier: str | None = None
    stop: str | list[str] | None = None
    store: bool | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    temperature: float | None = Field(None, ge=0)
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    top_logprobs: int | None = Field(None, ge=0)
    top_p: float | None = Field(None, ge=0, le=1)
    user: str | None = None
    web_search_options: dict[str, Any] | None = None

    # ---- extensions (vLLM and other OpenAI-compatible servers) ----
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    return_token_ids: bool | None = None
