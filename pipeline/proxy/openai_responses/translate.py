"""OpenAI responses: responses <-> chat completions (pure).

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
from pipeline.proxy.openai_responses.protocol import ResponsesRequest
from pipeline.proxy.surfaces.request_fields import (
    bad_request,
    joined_text,
    object_field,
    object_part,
    string_field,
)

TOOL_CHOICE_MODES = ("none", "auto", "required")
TEXT_FORMATS = ("text", "json_object", "json_schema")


def _content(content: Any, where: str) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(where, "must be a string or a list of content parts")
    parts: list[dict[str, Any]] = []
    for i, p in enumerate(content):
        at = f"{where}[{i}]"
        kind = object_part(p, at).get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": string_field(p, "text", at)})
        elif kind == "input_image" and p.get("image_url"):
            parts.append({"type": "image_url", "image_url": {"url": string_field(p, "image_url", at)}})
        elif kind == "refusal":
            parts.append({"type": "text", "text": string_field(p, "refusal", at)})
        else:
            raise bad_request(at, f"content part type {kind!r} is not supported by this proxy")
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _has_text(part: dict[str, Any]) -> bool:
    return part.get("text") is not None


def item_messages(req: ResponsesRequest) -> list[dict[str, Any]]:
    """The chat messages of the input items alone (what a response adds to its conversation)."""
    messages: list[dict[str, Any]] = []
    items = req.input
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
        return messages
    for i, item in enumerate(items):
        where = f"input[{i}]"
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise bad_request(where + ".role", f"unsupported role {role!r}")
            messages.append({"role": role, "content": _content(item.get("content"), where + ".content")})
        elif kind == "function_call":
            if not item.get("call_id") or not item.get("name"):
                raise bad_request(where, "function_call needs call_id and name")
            call = {
                "id": string_field(item, "call_id", where),
                "type": "function",
                "function": {
                    "name": string_field(item, "name", where),
                    "arguments": string_field(item, "arguments", where, required=False),
                },
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":  # same turn as the text before it
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            if not item.get("call_id"):
                raise bad_request(where, "function_call_output needs call_id")
            call_id = string_field(item, "call_id", where)
            output = joined_text(item.get("output"), where + ".output", _has_text)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        elif kind == "reasoning":
            continue
        else:
            raise bad_request(where + ".type", f"input item type {kind!r} is not supported by this proxy")
    return messages


def _tools(tools: list[Any]) -> list[dict[str, Any]]:
    out = []
    for i, t in enumerate(tools):
        at = f"tools[{i}]"
        if object_part(t, at).get("type") != "function" or not t.get("name"):
            raise bad_request(at, f"only function tools can be translated, got type {t.get('type')!r}")
        string_field(t, "name", at)
        object_field(t, "parameters", at, required=False)
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


def to_chat(req: ResponsesRequest, history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The chat request for a responses request; ``history`` is the conversation ``previous_response_id``
    names (oldest first)."""
    if req.conversation:
        raise bad_request(
            "conversation",
            "conversations are not kept by this proxy: use previous_response_id or send the full input",
        )
    if req.background:
        raise bad_request("background", "background responses are not supported by this proxy")
    system = [{"role": "system", "content": req.instructions}] if req.instructions else []
    messages = system + list(history or ()) + item_messages(req)
    chat: dict[str, Any] = {"model": req.model, "messages": messages}
    if req.max_output_tokens is not None:
        chat["max_tokens"] = req.max_output_tokens
    for key in ("temperature", "top_p", "parallel_tool_calls", "stream", "user"):
        if getattr(req, key) is not None:
            chat[key] = getattr(req, key)
    if req.tools:
        chat["tools"] = _tools(req.tools)
    if req.tool_choice is not None:
        chat["tool_choice"] = _tool_choice(req.tool_choice)
    response_format = _response_format(req.text or {})
    if response_format is not None:
        chat["response_format"] = response_format
    return chat


def _tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    if isinstance(choice, str):
        if choice not in TOOL_CHOICE_MODES:
            raise bad_request("tool_choice", f"must be one of {', '.join(TOOL_CHOICE_MODES)} or a function")
        return choice
    if choice.get("type") != "function":
        raise bad_request(
            "tool_choice.type", f"only function tool choices translate, got {choice.get('type')!r}"
        )
    name = string_field(choice, "name", "tool_choice")
    if not name:
        raise bad_request("tool_choice.name", "must name the function")
    return {"type": "function", "function": {"name": name}}


def _response_format(text: dict[str, Any]) -> dict[str, Any] | None:
    """``text.format`` as the chat ``response_format`` (None: plain text)."""
    fmt = object_field(text, "format", "text", required=False)
    kind = fmt.get("type", "text") if fmt else "text"
    if kind not in TEXT_FORMATS:
        raise bad_request("text.format.type", f"must be one of {', '.join(TEXT_FORMATS)}, got {kind!r}")
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        if not string_field(fmt, "name", "text.format"):
            raise bad_request("text.format.name", "must name the schema")
        object_field(fmt, "schema", "text.format")
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    return None


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


def _sent(req: ResponsesRequest, key: str, default: Any) -> Any:
    """The field as the agent sent it (null included); ``default`` when it was not sent."""
    return getattr(req, key) if key in req.model_fields_set else default


def to_response(
    resp: dict[str, Any],
    req: ResponsesRequest,
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
        "instructions": req.instructions,
        "max_output_tokens": req.max_output_tokens,
        "model": req.model,
        "output": output,
        "parallel_tool_calls": _sent(req, "parallel_tool_calls", True),
        "previous_response_id": req.previous_response_id,
        "store": stored,
        "temperature": req.temperature,
        "text": req.text or {"format": {"type": "text"}},
        "tool_choice": _sent(req, "tool_choice", "auto"),
        "tools": req.tools or [],
        "top_p": req.top_p,
        "truncation": _sent(req, "truncation", "disabled"),
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.get("completion_tokens", 0),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.get("total_tokens", 0),
        },
        "user": req.user,
        "metadata": req.metadata or {},
    }
