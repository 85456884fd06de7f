"""OpenAI responses: the request model of ``POST /v1/responses`` (API order).

``previous_response_id`` continues a response this proxy served to the same tenant (kept in memory
only, see ``chains``); ``conversation`` objects are not kept and are refused with a 400.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pipeline.proxy.surfaces.request import OpenModel, TokenLimit


class ResponsesRequest(OpenModel):
    model: str = Field(min_length=1)
    background: bool | None = None
    conversation: str | dict[str, Any] | None = None
    include: list[str] | None = None
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    max_output_tokens: TokenLimit | None = None
    max_tool_calls: int | None = None
    metadata: dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    prompt: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    service_tier: str | None = None
    store: bool | None = None
    stream: bool | None = None
    temperature: float | None = Field(None, ge=0)
    text: dict[str, Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    top_logprobs: int | None = Field(None, ge=0)
    top_p: float | None = Field(None, ge=0, le=1)
    truncation: str | None = None
    user: str | None = None
