"""Anthropic messages: the request models of ``/v1/messages`` and its token count (API order).

Content blocks stay dicts: ``translate.py`` checks each block it translates and names the bad one.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pipeline.proxy.surfaces.request import OpenModel, TokenLimit


class MessagesRequest(OpenModel):
    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_tokens: TokenLimit
    container: str | None = None
    mcp_servers: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None
    service_tier: str | None = None
    stop_sequences: list[str] | None = None
    stream: bool | None = None
    system: str | list[dict[str, Any]] | None = None
    temperature: float | None = Field(None, ge=0, le=1)
    thinking: dict[str, Any] | None = None
    tool_choice: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    top_k: int | None = Field(None, ge=0)
    top_p: float | None = Field(None, ge=0, le=1)


class CountTokensRequest(OpenModel):
    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    mcp_servers: list[dict[str, Any]] | None = None
    system: str | list[dict[str, Any]] | None = None
    thinking: dict[str, Any] | None = None
    tool_choice: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
