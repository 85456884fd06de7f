"""Anthropic messages: Anthropic messages <-> OpenAI chat completions (pure).

Request: ``system`` becomes a system message; ``tool_result`` blocks become ``role=tool`` messages (placed
before the rest of that user turn, right after the assistant's tool calls, as chat requires); ``tool_use``
blocks become ``tool_calls`` with ``arguments = json.dumps(input)``; images become ``image_url`` data URLs;
tools/tool_choice/stop_sequences/top_k map to their chat equivalents. ``thinking`` blocks and server
tools have no chat equivalent: thinking blocks are dropped, server tools are a 400.
Response: text and tool calls of choice 0 become ``text``/``tool_use`` blocks; ``finish_reason`` maps to
``stop_reason``; usage to ``input_tokens``/``output_tokens``.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.proxy.anthropic_messages.protocol import CountTokensRequest, MessagesRequest
from pipeline.proxy.surfaces.request_fields import (
    bad_request,
    joined_text,
    object_field,
    object_part,
    string_field,
)

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


def _is_text_block(block: dict[str, Any]) -> bool:
    return block.get("type") == "text"


def _image_part(block: dict[str, Any], where: str) -> dict[str, Any]:
    src = object_field(block, "source", where)
    at = where + ".source"
    if src.get("type") == "base64":
        media = string_field(src, "media_type", at, required=False) or "image/png"
        url = f"data:{media};base64,{string_field(src, 'data', at)}"
    elif src.get("type") == "url":
        url = string_field(src, "url", at)
    else:
        raise bad_request(at, "image source must be base64 or url")
    return {"type": "image_url", "image_url": {"url": url}}


def _document_text(block: dict[str, Any], where: str) -> str:
    src = object_field(block, "source", where)
    if src.get("type") != "text":
        raise bad_request(where + ".source", "only text documents can be translated by this proxy")
    return string_field(src, "data", where + ".source")


def _user_turn(content: list[Any], where: str, out: list[dict[str, Any]]) -> None:
    parts: list[dict[str, Any]] = []
    for i, b in enumerate(content):
        at = f"{where}.content[{i}]"
        kind = object_part(b, at).get("type")
        if kind == "tool_result":
            call_id = string_field(b, "tool_use_id", at)
            if not call_id:
                raise bad_request(at, "tool_result needs tool_use_id")
            result = b.get("content")
            text = joined_text(result, at + ".content", _is_text_block)
            out.append({"role": "tool", "tool_call_id": call_id, "content": text})
        elif kind == "text":
            parts.append({"type": "text", "text": string_field(b, "text", at)})
        elif kind == "image":
            parts.append(_image_part(b, at))
        elif kind == "document":
            parts.append({"type": "text", "text": _document_text(b, at)})
        else:
            raise bad_request(at, f"content block type {kind!r} is not supported by this proxy")
    if parts:
        only_text = all(p["type"] == "text" for p in parts)
        out.append({"role": "user", "content": "".join(p["text"] for p in parts) if only_text else parts})


def _assistant_turn(content: list[Any], where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, b in enumerate(content):
        at = f"{where}.content[{i}]"
        kind = object_part(b, at).get("type")
        if kind == "text":
            texts.append(string_field(b, "text", at))
        elif kind == "tool_use":
            call_id, name = string_field(b, "id", at), string_field(b, "name", at)
            if not call_id or not name:
                raise bad_request(at, "tool_use needs id and name")
            args = json.dumps(object_field(b, "input", at, required=False), ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": args}})
        elif kind in ("thinking", "redacted_thinking"):
            continue  # no chat equivalent; the backend never produced it through this proxy
        else:
            raise bad_request(at, f"content block type {kind!r} is not supported in assistant turns")
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _tools(tools: list[Any]) -> list[dict[str, Any]]:
    out = []
    for i, t in enumerate(tools):
        at = f"tools[{i}]"
        if "input_schema" not in object_part(t, at) or not t.get("name"):
            raise bad_request(
                at, f"only custom tools (name + input_schema) can be translated, got type {t.get('type')!r}"
            )
        fn = {"name": string_field(t, "name", at), "parameters": object_field(t, "input_schema", at)}
        if t.get("description") is not None:
            fn["description"] = string_field(t, "description", at)
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(choice: dict[str, Any]) -> tuple[Any, bool | None]:
    kind = choice.get("type")
    parallel = False if choice.get("disable_parallel_tool_use") else None
    if kind == "auto":
        return "auto", parallel
    if kind == "any":
        return "required", parallel
    if kind == "none":
        return "none", parallel
    if kind == "tool" and choice.get("name"):
        return {
            "type": "function",
            "function": {"name": string_field(choice, "name", "tool_choice")},
        }, parallel
    raise bad_request("tool_choice", f"unsupported tool_choice {choice!r}")


def to_chat(req: MessagesRequest | CountTokensRequest, max_tokens: int | None = None) -> dict[str, Any]:
    """The chat-completions request for an Anthropic messages request (a token count names ``max_tokens``)."""
    messages: list[dict[str, Any]] = []
    if req.system:
        messages.append(
            {
                "role": "system",
                "content": joined_text(req.system, "system", _is_text_block, others="refuse"),
            }
        )
    last = len(req.messages) - 1
    for i, m in enumerate(req.messages):
        where = f"messages[{i}]"
        role = m.get("role")
        content = m.get("content")
        if role not in ("user", "assistant"):
            raise bad_request(where + ".role", f"role must be user or assistant, got {role!r}")
        if not content and not (i == last and role == "assistant"):  # as the Messages API rules
            raise bad_request(
                where + ".content",
                "all messages must have non-empty content except the final assistant message",
            )
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
        elif isinstance(content, list):
            if role == "user":
                _user_turn(content, where, messages)
            else:
                messages.append(_assistant_turn(content, where))
        else:
            raise bad_request(where + ".content", "must be a string or a list of content blocks")
    limit = max_tokens if max_tokens is not None else req.max_tokens  # type: ignore[union-attr]
    chat: dict[str, Any] = {"model": req.model, "messages": messages, "max_tokens": limit}
    for key in ("temperature", "top_p", "top_k", "stream"):
        if getattr(req, key, None) is not None:
            chat[key] = getattr(req, key)
    stop = getattr(req, "stop_sequences", None)
    if stop:
        chat["stop"] = stop
    if req.tools:
        chat["tools"] = _tools(req.tools)
    if req.tool_choice:
        chat["tool_choice"], parallel = _tool_choice(req.tool_choice)
        if parallel is not None:
            chat["parallel_tool_calls"] = parallel
    user = (getattr(req, "metadata", None) or {}).get("user_id")
    if user:
        chat["user"] = str(user)
    return chat


def parse_arguments(args: Any) -> Any:
    if isinstance(args, dict):
        return args
    try:
        value = json.loads(args) if args else {}
    except (TypeError, ValueError):
        return {"_unparsed_arguments": args}
    return value if isinstance(value, dict) else {"_value": value}


def message_id(chat_id: Any) -> str:
    return "msg_" + str(chat_id or "sluice").removeprefix("chatcmpl-")


def stop_reason(choice: dict[str, Any]) -> tuple[str, str | None]:
    reason = STOP_REASONS.get(choice.get("finish_reason") or "stop", "end_turn")
    matched = choice.get("stop_reason")  # vLLM: the stop string that ended generation
    if reason == "end_turn" and isinstance(matched, str):
        return "stop_sequence", matched
    return reason, None


def to_anthropic(resp: dict[str, Any], model: str) -> dict[str, Any]:
    choices = resp.get("choices") or [{}]
    choice = min(choices, key=lambda c: c.get("index", 0))
    msg = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if msg.get("content"):
        content.append({"type": "text", "text": msg["content"]})
    for tc in msg.get("tool_calls") or ():
        fn = tc.get("function") or {}
        content.append(
            {
                "type": "tool_use",
                "id": tc.get("id"),
                "name": fn.get("name"),
                "input": parse_arguments(fn.get("arguments")),
            }
        )
    reason, sequence = stop_reason(choice)
    usage = resp.get("usage") or {}
    return {
        "id": message_id(resp.get("id")),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reason,
        "stop_sequence": sequence,
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
        },
    }
