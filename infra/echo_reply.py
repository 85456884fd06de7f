"""The echo backend's deterministic replies: its prefix-stable chat template, its byte "tokenizer", and
one choice (text, or the tool call ``tool_choice`` asks for) with token ids and logprobs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

_END = "<|end|>"


def content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _tool_text(calls: list[dict[str, Any]] | None) -> str:
    out = []
    for c in calls or []:
        fn = c.get("function") or {}
        out.append(f"<tool_call>{fn.get('name', '')}:{fn.get('arguments', '')}</tool_call>")
    return "".join(out)


def render_prompt(messages: list[dict[str, Any]]) -> str:
    """The chat template: prefix-stable, ends with the generation prompt."""
    parts = [
        f"<|{m.get('role')}|>{content_text(m.get('content'))}{_tool_text(m.get('tool_calls'))}{_END}"
        for m in messages
    ]
    return "".join(parts) + "<|assistant|>"


def tokenize(text: str) -> list[int]:
    return list(text.encode())


def token_logprob(i: int) -> float:
    return -round(((i * 7919) % 13 + 1) / 20, 4)


def _sample_arg(schema: dict[str, Any], hint: str) -> Any:
    kind = schema.get("type")
    return {"integer": 42, "number": 1.5, "boolean": True, "array": [], "object": {}}.get(
        kind, hint[:24] or "x"
    )


def _wanted_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    tools = body.get("tools") or []
    choice = body.get("tool_choice")
    if not tools or choice in (None, "auto", "none"):
        return None
    if isinstance(choice, dict):
        name = _object(choice.get("function")).get("name")
        return next((t for t in tools if _object(_object(t).get("function")).get("name") == name), None)
    return _object(tools[0]) if choice in ("required", "any") else None


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}``: a malformed tool spec names no tool or argument."""
    return value if isinstance(value, dict) else {}


class Reply:
    """One deterministic choice: text and/or a tool call, with tokens and logprobs."""

    def __init__(self, body: dict[str, Any], index: int, hint: str) -> None:
        self.index = index
        tool = _wanted_tool(body)
        self.tool_calls: list[dict[str, Any]] = []
        if tool is not None:
            fn = _object(tool.get("function"))
            props = _object(_object(fn.get("parameters")).get("properties"))
            args = json.dumps({k: _sample_arg(v, hint) for k, v in props.items()})
            cid = "call_" + hashlib.sha1(f"{fn.get('name')}|{hint}|{index}".encode()).hexdigest()[:16]
            self.tool_calls = [
                {"id": cid, "type": "function", "function": {"name": fn.get("name"), "arguments": args}}
            ]
            self.content: str | None = None
        else:
            self.content = (f"Echo[{index}]: " if index else "Echo: ") + hint
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        self.finish = "tool_calls" if self.tool_calls else "stop"
        completion = (self.content or "") + _tool_text(self.tool_calls) + _END
        ids = tokenize(completion)
        if isinstance(limit, int) and 0 < limit < len(ids) and not self.tool_calls:
            ids = ids[:limit]
            self.content = bytes(ids).decode(errors="ignore")
            self.finish = "length"
        self.token_ids = ids

    def logprobs(self) -> dict[str, Any]:
        return {
            "content": [
                {
                    "token": bytes([t]).decode("latin-1"),
                    "logprob": token_logprob(i),
                    "bytes": [t],
                    "top_logprobs": [],
                }
                for i, t in enumerate(self.token_ids)
            ]
        }


def pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
