"""Linking: canonical forms of chat messages (what is recorded, and the keys histories link by).

Two hashes, on purpose:
- the *link key* of a message is lenient (text parts joined, empty content = none, tool-call arguments
  re-serialised with sorted keys), so that an agent re-sending an assistant message through another SDK
  (or the Anthropic translation) still extends its trajectory;
- the *exact* hash is ``sluice.events.message_hash`` over the recorded ``Message`` models, which is what
  ``Observation.prefix_hash`` promises to consumers.

Everything here is pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError

from pipeline.proxy.exceptions import ApiError
from sluice.compact_json import compact_json
from sluice.errors import validation_problems
from sluice.events import Message

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})  # function: legacy
_DUMPS = compact_json(sort_keys=True, ensure_ascii=False)


def _bad(where: str, why: str) -> ApiError:
    return ApiError(400, f"{where}: {why}", param=where)


def event_message(raw: Any, where: str) -> Message:
    """An OpenAI chat message (dict) as the event ``Message``: tool calls flattened, nulls dropped."""
    if not isinstance(raw, dict):
        raise _bad(where, f"each message must be an object, got {type(raw).__name__}")
    data = {k: v for k, v in raw.items() if v is not None}
    calls = data.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise _bad(where + ".tool_calls", "must be a list")
        data["tool_calls"] = [
            flat_tool_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)
        ] or None
        if data["tool_calls"] is None:
            del data["tool_calls"]
    for noise in ("refusal", "annotations", "audio", "function_call"):
        if noise in data and not data[noise]:
            del data[noise]
    try:
        return Message.model_validate(data)
    except ValidationError as err:
        loc, msg = validation_problems(err)[0]
        raise _bad(f"{where}.{loc}" if loc else where, msg) from None


def flat_tool_call(raw: Any, where: str) -> dict[str, Any]:
    """``{"id", "type", "function": {"name", "arguments"}}`` -> the flat ``ToolCall`` shape."""
    if not isinstance(raw, dict):
        raise _bad(where, "a tool call must be an object")
    fn = raw.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise _bad(where + ".function", "a tool call needs function.name")
    out = {k: v for k, v in raw.items() if k not in ("function", "index") and v is not None}
    out["type"] = raw.get("type") or "function"
    out["name"] = fn["name"]
    args = fn.get("arguments")
    out["arguments"] = args if isinstance(args, str) else ("" if args is None else _DUMPS(args))
    return out


TEXT_PARTS = ("text", "input_text", "output_text")


def _text_of(content: Any, where: str) -> Any:
    """Content for the link key: text parts joined, empty as None, other parts kept as they are. Content
    that is neither text nor a list of typed parts is a 400, as the API makes it."""
    if isinstance(content, list):
        texts: list[str] = []
        for i, p in enumerate(content):
            kind = p.get("type") if isinstance(p, dict) else None
            if not isinstance(kind, str):
                raise _bad(f"{where}[{i}]", "a content part must be an object with a type")
            if kind in TEXT_PARTS:
                text = p.get("text")
                if not isinstance(text, str):
                    raise _bad(f"{where}[{i}].text", "must be a string")
                texts.append(text)
        if len(texts) < len(content):
            return content
        content = "".join(texts)
    elif content is not None and not isinstance(content, str):
        raise _bad(where, "must be a string, a list of content parts or null")
    return content or None


def _args_key(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return json.loads(args) if args.strip() else None
        except ValueError:
            return args
    return args


def link_key(raw: Any, where: str = "messages") -> bytes:
    """The lenient identity of one OpenAI chat message, as bytes to hash."""
    if not isinstance(raw, dict):
        raise _bad(where, f"each message must be an object, got {type(raw).__name__}")
    role = raw.get("role")
    if role not in ROLES:
        raise _bad(where + ".role", f"role must be one of {sorted(ROLES)}, got {role!r}")
    call_id = raw.get("tool_call_id")
    if role == "tool" and not (isinstance(call_id, str) and call_id):
        raise _bad(where + ".tool_call_id", "a tool message needs the id of the call it answers")
    key: list[Any] = [role, _text_of(raw.get("content"), where + ".content"), raw.get("name"), call_id]
    calls = raw.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise _bad(where + ".tool_calls", "must be a list")
        for c in calls:
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict):
                raise _bad(where + ".tool_calls", "a tool call needs a function object")
            key.append([c.get("id"), fn.get("name"), _args_key(fn.get("arguments"))])
    try:
        return _DUMPS(key).encode()
    except (TypeError, ValueError) as err:
        raise _bad(where, f"not JSON-serialisable: {err}") from None


def link_chain(messages: list[Any], seed: bytes = b"") -> list[bytes]:
    """``out[k]`` = link hash of the first k messages (``out[0]`` is the seed)."""
    return extend_chain([seed], messages, 0)


def extend_chain(chain: list[bytes], messages: list[Any], start: int) -> list[bytes]:
    """``chain`` (the link hashes of ``messages[:start]``, ``start + 1`` of them) extended in place over
    ``messages[start:]``: a rolling digest, so only those messages are keyed and hashed."""
    h = chain[-1]
    for i in range(start, len(messages)):
        h = hashlib.blake2b(h + link_key(messages[i], f"messages[{i}]"), digest_size=16).digest()
        chain.append(h)
    return chain


def link_extend(seed: bytes, message: Any) -> bytes:
    return hashlib.blake2b(seed + link_key(message), digest_size=16).digest()


def fingerprint(value: Any) -> str:
    """sha256 of canonical JSON (sorted keys, compact)."""
    return hashlib.sha256(_DUMPS(value).encode()).hexdigest()


def harness_fingerprint(messages: list[Any]) -> str | None:
    """Hash of the system/developer prompt(s): identifies the harness a trajectory ran under."""
    system = [
        m.get("content") for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")
    ]
    return fingerprint(system) if system else None
