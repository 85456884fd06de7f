"""Request models of the model server's OpenAI surface. Unknown fields pass through (``extra="allow"``)
and are reported back in the response header ``x-sluice-ignored-fields``; our own extensions are fenced.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")

    def ignored_fields(self) -> list[str]:
        return sorted((self.model_extra or {}).keys())


def _stops(v: str | list[str] | None) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else [s for s in v if s]


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatCompletionRequest(_Request):
    # --- OpenAI fields, in the order of the API reference
    messages: list[dict[str, Any]] = Field(min_length=1)
    model: str
    logprobs: bool = False
    max_completion_tokens: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    n: int = Field(1, ge=1, le=64)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float = Field(1.0, ge=0, le=2)
    tool_choice: str | dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    top_p: float = Field(1.0, gt=0, le=1)
    user: str | None = None
    # --- extensions (vLLM-compatible)
    return_token_ids: bool = False
    ignore_eos: bool = False  # decode up to max_tokens even past the end-of-sequence token

    @field_validator("messages")
    @classmethod
    def _roles(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, m in enumerate(v):
            if not isinstance(m, dict) or "role" not in m:
                raise ValueError(f"messages[{i}] needs a role")
        return v

    def stops(self) -> list[str]:
        return _stops(self.stop)

    def token_limit(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


class CompletionRequest(_Request):
    # --- OpenAI fields, in the order of the API reference
    model: str
    prompt: str | list[str] | list[int] | list[list[int]]
    echo: bool = False
    logprobs: int | None = Field(None, ge=0, le=5)
    max_tokens: int | None = Field(16, ge=0)
    n: int = Field(1, ge=1, le=64)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    suffix: str | None = None
    temperature: float = Field(1.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    user: str | None = None
    # --- extensions (vLLM-compatible)
    return_token_ids: bool = False
    ignore_eos: bool = False  # decode up to max_tokens even past the end-of-sequence token

    def stops(self) -> list[str]:
        return _stops(self.stop)


class EmbeddingRequest(_Request):
    # --- OpenAI fields, in the order of the API reference
    input: str | list[str] | list[int] | list[list[int]]
    model: str
    dimensions: int | None = Field(None, ge=1)
    encoding_format: Literal["float", "base64"] = "float"
    user: str | None = None

    def items(self) -> list[str | list[int]]:
        """One entry per embedding asked for: a text or a list of token ids."""
        v = self.input
        if isinstance(v, str) or (v and isinstance(v[0], int)):
            return [v]  # type: ignore[list-item]
        if not v:
            raise ValueError("input: at least one text or token id list")
        return list(v)  # type: ignore[arg-type]


class TokenizeRequest(_Request):
    """vLLM's ``POST /tokenize``: a chat (``messages``) or a ``prompt``, counted by the serving tokenizer."""

    model: str
    messages: list[dict[str, Any]] | None = None
    prompt: str | None = None
    add_generation_prompt: bool = True
    add_special_tokens: bool = False
    tools: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _one_input(self) -> TokenizeRequest:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give either messages or prompt")
        return self
