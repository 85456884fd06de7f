"""OpenAI completions: rebuild a ``text_completion`` from the chunks of a streamed one (pure).

Text is concatenated per choice index; logprobs and vLLM ``token_ids`` are extended; ``prompt_token_ids``
come from the first chunk of a choice that carries them and ``usage`` from the final chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.proxy.forwarding.stream_assembly import ChoiceTail, StreamAssembly
from pipeline.proxy.recording.step import token_logprobs


@dataclass(slots=True)
class _Acc(ChoiceTail):
    text: list[str] = field(default_factory=list)
    prompt_token_ids: list[int] | None = None


class CompletionStreamAssembler(StreamAssembly[_Acc]):
    """Rebuild a ``text_completion`` from its chunks (text concatenated per choice index)."""

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
            acc.extend(c, token_logprobs(c.get("logprobs")))
            if acc.prompt_token_ids is None and isinstance(c.get("prompt_token_ids"), list):
                acc.prompt_token_ids = c["prompt_token_ids"]

    @property
    def has_data(self) -> bool:
        return bool(self.choices)

    def result(self) -> dict[str, Any]:
        choices = []
        for i in sorted(self.choices):
            a = self.choices[i]
            c: dict[str, Any] = {"index": i, "text": "".join(a.text), **a.fields("token_logprobs")}
            if a.prompt_token_ids is not None:
                c["prompt_token_ids"] = a.prompt_token_ids
            choices.append(c)
        return self.response("text_completion", choices)
