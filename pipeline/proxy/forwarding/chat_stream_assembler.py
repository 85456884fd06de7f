"""Forwarding: rebuild a ``chat.completion`` from the chunks of a streamed one (pure).

Content, reasoning and refusal deltas are concatenated per choice; tool-call deltas are merged by their
``index`` (id/type/name from the first delta that has them, ``arguments`` concatenated); logprobs and
vLLM ``token_ids`` are extended; ``prompt_token_ids`` come from the first chunk that carries them and
``usage`` from the final chunk (``stream_options.include_usage``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from pipeline.proxy.forwarding.stream_assembly import ChoiceTail, StreamAssembly


def tool_call_id(response_id: str | None, choice: int, call: int) -> str:
    """A stable id for a tool call the backend sent without one."""
    digest = hashlib.sha1(f"{response_id}|{choice}|{call}".encode()).hexdigest()[:24]
    return f"call_{digest}"


@dataclass(slots=True)
class _ToolCallAcc:
    id: str | None = None
    type: str = "function"
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _ChoiceAcc(ChoiceTail):
    role: str = "assistant"
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tool_calls: dict[int, _ToolCallAcc] = field(default_factory=dict)


class ChatStreamAssembler(StreamAssembly[_ChoiceAcc]):
    def __init__(self) -> None:
        super().__init__()
        self.prompt_token_ids: list[int] | None = None
        self.chunks = 0

    def feed(self, chunk: dict[str, Any], now: float = 0.0) -> None:
        self.chunks += 1
        if not self.head:
            self.head = {k: chunk.get(k) for k in ("id", "created", "model")}
        if chunk.get("system_fingerprint"):
            self.head["system_fingerprint"] = chunk["system_fingerprint"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if self.prompt_token_ids is None and isinstance(chunk.get("prompt_token_ids"), list):
            self.prompt_token_ids = chunk["prompt_token_ids"]
        for c in chunk.get("choices") or ():
            if not isinstance(c, dict):
                continue
            acc = self.choices.get(c.get("index", 0))
            if acc is None:
                acc = self.choices[c.get("index", 0)] = _ChoiceAcc()
            delta = c.get("delta") or {}
            if delta.get("role"):
                acc.role = delta["role"]
            text = delta.get("content")
            if text:
                acc.content.append(text)
            elif text == "" and not acc.content:
                acc.content.append("")
            for key, parts in (
                ("reasoning_content", acc.reasoning),
                ("reasoning", acc.reasoning),
                ("refusal", acc.refusal),
            ):
                if delta.get(key):
                    parts.append(delta[key])
            for tc in delta.get("tool_calls") or ():
                self._merge_tool_call(acc, tc)
            if self.first_token_at is None and (
                text or delta.get("tool_calls") or delta.get("reasoning_content")
            ):
                self.first_token_at = now
            lp = c.get("logprobs")
            acc.extend(
                c, lp["content"] if isinstance(lp, dict) and isinstance(lp.get("content"), list) else None
            )

    @staticmethod
    def _merge_tool_call(acc: _ChoiceAcc, tc: Any) -> None:
        if not isinstance(tc, dict):
            return
        idx = tc.get("index", len(acc.tool_calls))
        call = acc.tool_calls.get(idx)
        if call is None:
            call = acc.tool_calls[idx] = _ToolCallAcc()
        if tc.get("id"):
            call.id = tc["id"]
        if tc.get("type"):
            call.type = tc["type"]
        fn = tc.get("function") or {}
        if fn.get("name"):
            call.name = fn["name"] if not call.name else call.name
        if fn.get("arguments"):
            call.arguments.append(fn["arguments"])

    @property
    def has_data(self) -> bool:
        return bool(self.choices) or self.usage is not None

    def result(self) -> dict[str, Any]:
        """The equivalent non-streamed ``chat.completion`` (with vLLM token fields when present)."""
        choices = []
        for index in sorted(self.choices):
            acc = self.choices[index]
            calls = [
                {
                    "id": tc.id or tool_call_id(self.head.get("id"), index, j),
                    "type": tc.type,
                    "function": {"name": tc.name, "arguments": "".join(tc.arguments)},
                }
                for j, tc in (sorted(acc.tool_calls.items()))
            ]
            content = "".join(acc.content) if acc.content else None
            message: dict[str, Any] = {
                "role": acc.role,
                "content": None if calls and not content else content,
            }
            if calls:
                message["tool_calls"] = calls
            if acc.reasoning:
                message["reasoning_content"] = "".join(acc.reasoning)
            if acc.refusal:
                message["refusal"] = "".join(acc.refusal)
            choices.append({"index": index, "message": message, **acc.fields("content")})
        out = self.response("chat.completion", choices)
        if self.prompt_token_ids is not None:
            out["prompt_token_ids"] = self.prompt_token_ids
        return out
