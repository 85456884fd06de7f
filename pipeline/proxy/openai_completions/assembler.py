"""Rebuild a ``text_completion`` from the chunks of a streamed one (pure).

Text is concatenated per choice index; logprobs and vLLM ``token_ids`` are extended; ``prompt_token_ids``
come from the first chunk of a choice that carries them and ``usage`` from the final chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.proxy.step_event import completion_logprobs


@dataclass(slots=True)
class _Acc:
    text: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    logprobs: list[float] | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None


class CompletionStreamAssembler:
    """Rebuild a ``text_completion`` from its chunks (text concatenated per choice index)."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.choices: dict[int, _Acc] = {}
        self.usage: dict[str, Any] | None = None
        self.first_token_at: float | None = None

    def feed(self, chunk: dict[str, Any], now: float = 0.0) -> None:
        if not self.head:
            self.head = {k: chunk.get(k) for k in ("id", "created", "model", "system_fingerprint")}
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for c in chunk.get("choices") or ():
            if not isinstance(c, dict):
                continue
            acc = self.choices.setdefault(c.get("index", 0), _Acc())
            if c.get("text"):
                acc.text.append(c["text"])
                if self.first_token_at is None:
                    self.first_token_at = now
            if c.get("finish_reason"):
                acc.finish_reason = c["finish_reason"]
            lps = completion_logprobs(c.get("logprobs"))
            if lps is not None:
                acc.logprobs = (acc.logprobs or []) + lps
            if isinstance(c.get("token_ids"), list):
                acc.token_ids = (acc.token_ids or []) + c["token_ids"]
            if acc.prompt_token_ids is None and isinstance(c.get("prompt_token_ids"), list):
                acc.prompt_token_ids = c["prompt_token_ids"]

    @property
    def has_data(self) -> bool:
        return bool(self.choices)

    def finished_all(self) -> bool:
        return bool(self.choices) and all(a.finish_reason for a in self.choices.values())

    def result(self) -> dict[str, Any]:
        choices = []
        for i in sorted(self.choices):
            a = self.choices[i]
            c: dict[str, Any] = {"index": i, "text": "".join(a.text), "finish_reason": a.finish_reason}
            c["logprobs"] = {"token_logprobs": a.logprobs} if a.logprobs is not None else None
            if a.token_ids is not None:
                c["token_ids"] = a.token_ids
            if a.prompt_token_ids is not None:
                c["prompt_token_ids"] = a.prompt_token_ids
            choices.append(c)
        out: dict[str, Any] = {**self.head, "object": "text_completion", "choices": choices}
        if self.usage is not None:
            out["usage"] = self.usage
        return out
