"""OpenAI responses <-> chat completions (pure).

Input items become chat messages: ``message`` items keep their role (text parts joined; images as
``image_url``), consecutive ``function_call`` items become the ``tool_calls`` of one assistant message,
``function_call_output`` items become ``role=tool`` messages, ``reasoning`` items are dropped.
``instructions`` becomes the system message. Only function tools translate (built-in tools are a 400).
With ``previous_response_id`` the conversation kept for it (``chains``) goes between the system message
and the new input; the previous ``instructions`` are not carried over, as in the Responses API.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.proxy.exceptions import ApiError


def _bad(where: str, why: str) -> ApiError:
    return ApiError(400, f"{where}: {why}", param=where)


def _content(content: Any, where: str) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(where, "must be a string or a list of content parts")
    parts: list[dict[str, Any]] = []
    for i, p in enumerate(content):
        kind = p.get("type") if isinstance(p, dict) else None
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": str(p.get("text", ""))})
        elif kind == "input_image" and p.get("image_url"):
            parts.append({"type": "image_url", "image_url": {"url": p["image_url"]}})
        elif kind == "refusal":
            parts.append({"type": "text", "text": str(p.get("refusal", ""))})
        else:
            raise _bad(f"{where}[{i}]", f"content part type {kind!r} is not supported by this proxy")
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
    return "" if output is None else str(output)


def input_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """``instructions`` as the system message, then the input items."""
    system = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    return system + item_messages(body)


def item_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages of the input items alone (what a response adds to its conversation)."""
    messages: list[dict[str, Any]] = []
    items = body["input"]
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
        return messages
    for i, item in enumerate(items):
        where = f"input[{i}]"
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise _bad(where + ".role", f"unsupported role {role!r}")
            messages.append({"role": role, "content": _content(item.get("content"), where + ".content")})
        elif kind == "function_call":
            if not item.get("call_id") or not item.get("name"):
                raise _bad(where, "function_call needs call_id and name")
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item.get("arguments") or ""},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":  # same turn as the text before it
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            if not item.get("call_id"):
                raise _bad(where, "function_call_output needs call_id")
            messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": _output_text(item.get("output"))}
            )
        elif kind == "reasoning":
            continue
        else:
            raise _bad(where + ".type", f"input item type {kind!r} is not supported by this proxy")
    return messages


def _tools(tools: list[Any]) -> list[dict[str, Any]]:
    out = []
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or t.get("type") != "function" or not t.get("name"):
            kind = t.get("type") if isinstance(t, dict) else None
            raise _bad(f"tools[{i}]", f"only function tools can be translated, got type {kind!r}")
        fn = {k: t[k] for k in ("name", "description", "parameters", "strict") if t.get(k) is not None}
        out.append({"type": "function", "function": fn})
    return out


def previous_not_found(response_id: str) -> ApiError:
    """The Responses API's answer to a ``previous_response_id`` it does not hold."""
    return ApiError(
        400,
        f"Previous response with id '{response_id[:128]}' not found.",
        param="previous_response_id",
        code="previous_response_not_found",
    )


def to_chat(body: dict[str, Any], history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The chat request for a responses request; ``history`` is the conversation ``previous_response_id``
    names (oldest first)."""
    if body.get("conversation"):
        raise _bad(
            "conversation",
            "conversations are not kept by this proxy: use previous_response_id or send the full input",
        )
    if body.get("background"):
        raise _bad("background", "background responses are not supported by this proxy")
    system = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    messages = system + list(history or ()) + item_messages(body)
    chat: dict[str, Any] = {"model": body["model"], "messages": messages}
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    for key in ("temperature", "top_p", "parallel_tool_calls", "stream", "user"):
        if body.get(key) is not None:
            chat[key] = body[key]
    if body.get("tools"):
        chat["tools"] = _tools(body["tools"])
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        chat["tool_choice"] = choice
    elif isinstance(choice, dict) and choice.get("type") == "function" and choice.get("name"):
        chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        chat["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif fmt.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    return chat


def response_id(chat_id: Any) -> str:
    return "resp_" + str(chat_id or "sluice").removeprefix("chatcmpl-")


def reply_message(resp: dict[str, Any]) -> dict[str, Any] | None:
    """Choice 0 of a chat completion as the assistant message a continuation sends back."""
    choices = [c for c in resp.get("choices") or () if isinstance(c, dict)]
    if not choices:
        return None
    msg = min(choices, key=lambda c: c.get("index", 0)).get("message") or {}
    out: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    if msg.get("tool_calls"):
        out["tool_calls"] = [
            {"id": tc.get("id"), "type": "function", "function": tc.get("function") or {}}
            for tc in msg["tool_calls"]
            if isinstance(tc, dict)
        ]
    return out


def message_item(rid: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_" + rid.removeprefix("resp_"),
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def call_item(call: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    fn = call.get("function") or {}
    return {
        "type": "function_call",
        "id": "fc_" + str(call.get("id", "")).removeprefix("call_"),
        "call_id": call.get("id"),
        "name": fn.get("name"),
        "arguments": fn.get("arguments") or "",
        "status": status,
    }


def to_response(
    resp: dict[str, Any],
    body: dict[str, Any],
    status: str = "completed",
    rid: str | None = None,
    stored: bool = False,
) -> dict[str, Any]:
    """A ``response`` object from a chat completion (choice 0); ``rid`` is the id it is served under."""
    rid = rid or response_id(resp.get("id"))
    choices = resp.get("choices") or [{}]
    choice = min(choices, key=lambda c: c.get("index", 0))
    msg = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    if msg.get("content"):
        output.append(message_item(rid, msg["content"]))
    output += [call_item(tc) for tc in msg.get("tool_calls") or ()]
    usage = resp.get("usage") or {}
    incomplete = None
    if choice.get("finish_reason") == "length" and status == "completed":
        status, incomplete = "incomplete", {"reason": "max_output_tokens"}
    return {
        "id": rid,
        "object": "response",
        "created_at": resp.get("created") or int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "store": stored,
        "temperature": body.get("temperature"),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p"),
        "truncation": body.get("truncation", "disabled"),
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.get("completion_tokens", 0),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.get("total_tokens", 0),
        },
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }
