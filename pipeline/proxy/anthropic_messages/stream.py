"""Anthropic messages: a streamed chat completion as Anthropic's message stream, chunk by chunk (pure).

``message_start``, then per block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
``input_json_delta``) / ``content_block_stop``, then ``message_delta`` (stop reason, usage) and
``message_stop``. Only choice 0 is translated (the Anthropic API has no ``n``). Input token counts are
only known from the final usage chunk, so ``message_start`` carries 0 and ``message_delta`` the real ones.
"""

from __future__ import annotations

from typing import Any

from pipeline.proxy.anthropic_messages.translate import message_id, stop_reason
from pipeline.proxy.forwarding.chat_stream_assembler import tool_call_id
from pipeline.proxy.surfaces.sse import encode_event


class AnthropicStreamWriter:
    def __init__(self, model: str) -> None:
        self.model = model
        self.started = False
        self.block = -1
        self.block_kind: str | None = None
        self.tool_blocks: dict[int, int] = {}
        self.final_choice: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.chat_id: Any = None

    def _start(self, chat_id: Any) -> list[bytes]:
        self.started = True
        self.chat_id = chat_id
        message = {
            "id": message_id(chat_id),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [encode_event("message_start", {"type": "message_start", "message": message})]

    def _close_block(self) -> list[bytes]:
        if self.block_kind is None:
            return []
        self.block_kind = None
        return [encode_event("content_block_stop", {"type": "content_block_stop", "index": self.block})]

    def _open_block(self, block: dict[str, Any]) -> list[bytes]:
        out = self._close_block()
        self.block += 1
        self.block_kind = block["type"]
        start = {"type": "content_block_start", "index": self.block, "content_block": block}
        return [*out, encode_event("content_block_start", start)]

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return encode_event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )

    def feed(self, chunk: dict[str, Any]) -> list[bytes]:
        out: list[bytes] = [] if self.started else self._start(chunk.get("id"))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for c in chunk.get("choices") or ():
            if not isinstance(c, dict) or c.get("index", 0) != 0:
                continue
            delta = c.get("delta") or {}
            text = delta.get("content")
            if text:
                if self.block_kind != "text":
                    out += self._open_block({"type": "text", "text": ""})
                out.append(self._delta(self.block, {"type": "text_delta", "text": text}))
            for tc in delta.get("tool_calls") or ():
                if not isinstance(tc, dict):
                    continue
                ti = tc.get("index", 0)
                fn = tc.get("function") or {}
                if ti not in self.tool_blocks:
                    tid = tc.get("id") or tool_call_id(self.chat_id, 0, ti)
                    out += self._open_block(
                        {"type": "tool_use", "id": tid, "name": fn.get("name", ""), "input": {}}
                    )
                    self.tool_blocks[ti] = self.block
                if fn.get("arguments"):
                    out.append(
                        self._delta(
                            self.tool_blocks[ti],
                            {"type": "input_json_delta", "partial_json": fn["arguments"]},
                        )
                    )
            if c.get("finish_reason"):
                self.final_choice = c
        return out

    def end(self, error: str | None) -> list[bytes]:
        out: list[bytes] = [] if self.started else self._start(None)
        if error is not None:
            err = {"type": "error", "error": {"type": "api_error", "message": error}}
            return [*out, *self._close_block(), encode_event("error", err)]
        out += self._close_block()
        reason, sequence = stop_reason(self.final_choice)
        usage = {
            "input_tokens": self.usage.get("prompt_tokens", 0),
            "output_tokens": self.usage.get("completion_tokens", 0),
        }
        out.append(
            encode_event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": sequence},
                    "usage": usage,
                },
            )
        )
        out.append(encode_event("message_stop", {"type": "message_stop"}))
        return out
