"""OpenAI completions: the request model of ``POST /v1/completions`` (API order, extensions fenced)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pipeline.proxy.surfaces.request import OpenModel, Seed, TokenCount


class CompletionRequest(OpenModel):
    model: str = Field(min_length=1)
    prompt: str | list[str] | list[int] | list[list[int]]
    best_of: int | None = Field(None, ge=1)
    echo: bool | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    logprobs: int | None = Field(None, ge=0)
    max_tokens: TokenCount | None = None
    n: int | None = Field(None, ge=1, le=128)
    presence_penalty: float | None = None
    seed: Seed | None = None
    stop: str | list[str] | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    suffix: str | None = None
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, ge=0, le=1)
    user: str | None = None

    # ---- extensions (vLLM and other OpenAI-compatible servers) ----
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    return_token_ids: bool | None = None
