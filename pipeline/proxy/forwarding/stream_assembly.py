"""Forwarding: what every stream assembler keeps (head, choices by index, usage, first token time).

Per choice it keeps the finish reason, logprobs and (vLLM) token ids, whatever the surface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar


@dataclass(slots=True)
class ChoiceTail:
    """A streamed choice's finish reason, and its logprobs and token ids extended chunk by chunk."""

    finish_reason: str | None = None
    logprobs: list[Any] | None = None
    token_ids: list[int] | None = None

    def extend(self, choice: dict[str, Any], logprobs: list[Any] | None) -> None:
        """Take a chunk's choice: its finish reason, ``logprobs`` (read from it) and ``token_ids``."""
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        if logprobs is not None:
            self.logprobs = (self.logprobs or []) + logprobs
        ids = choice.get("token_ids")
        if isinstance(ids, list):
            self.token_ids = (self.token_ids or []) + ids

    def fields(self, logprobs_key: str) -> dict[str, Any]:
        """The choice's finish reason, logprobs (as ``{logprobs_key: [...]}``) and token ids, as the
        non-streamed response has them."""
        out: dict[str, Any] = {
            "finish_reason": self.finish_reason,
            "logprobs": {logprobs_key: self.logprobs} if self.logprobs is not None else None,
        }
        if self.token_ids is not None:
            out["token_ids"] = self.token_ids
        return out


A = TypeVar("A", bound=ChoiceTail)


class StreamAssembly(Generic[A]):
    """The state an assembler builds from a stream's chunks."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.choices: dict[int, A] = {}
        self.usage: dict[str, Any] | None = None
        self.first_token_at: float | None = None

    def response(self, obj: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        """The non-streamed response of type ``obj``: the head, the choices and the usage when known."""
        out: dict[str, Any] = {**self.head, "object": obj, "choices": choices}
        if self.usage is not None:
            out["usage"] = self.usage
        return out

    def finished_all(self) -> bool:
        return bool(self.choices) and all(c.finish_reason for c in self.choices.values())
