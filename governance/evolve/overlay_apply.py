"""How an overlay edits a request, and maps the response back to the agent's names (pure).

The overlay never rewrites the agent's system prompt whole: it drops the lines named in
``harness_remove`` (by ``harness_item_id``), appends its own harness items, and adds its memory entries
as a block of facts after them. When the request has no system message, one is put first.
Tool changes rewrite the declared tools; a renamed tool is renamed everywhere the backend reads it (the
tool list, a forced ``tool_choice``, earlier calls in the history), and calls to it are renamed back in
the response, so the backend sees one consistent set of tools and the agent keeps its own.

The proxy translates Anthropic messages and OpenAI responses requests to chat before it forwards them,
so ``apply_to_chat`` is the one place an overlay edits a request, whatever API the agent speaks.
"""

from __future__ import annotations

import copy
from typing import Any

from sluice.evolution import Overlay, harness_item_id

MEMORY_HEADER = "Facts to rely on:"


def _system_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def edit_system_prompt(text: str, overlay: Overlay) -> str:
    """The system prompt after the overlay's harness and memory edits."""
    removed = set(overlay.harness_remove)
    lines = [ln for ln in text.splitlines() if not (ln.strip() and harness_item_id(ln) in removed)]
    lines += [item.text for item in overlay.harness_add]
    if overlay.memory:
        lines.append(MEMORY_HEADER)
        lines += [f"- {m.text}" for m in overlay.memory]
    return "\n".join(ln for ln in lines if ln is not None).strip("\n")


def edit_tools(tools: list[Any], overlay: Overlay) -> list[Any]:
    """OpenAI ``tools`` (``{"type": "function", "function": {...}}``) after the overlay's tool changes."""
    changes = {c.tool: c for c in overlay.tools}
    out: list[Any] = []
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        change = changes.get(fn.get("name")) if isinstance(fn, dict) else None
        if change is None:
            out.append(tool)
            continue
        fn = dict(fn)
        if change.rename_to:
            fn["name"] = change.rename_to
        if change.description is not None:
            fn["description"] = change.description
        if change.parameters is not None:
            fn["parameters"] = copy.deepcopy(change.parameters)
        out.append({**tool, "function": fn})
    return out


def apply_to_chat(body: dict[str, Any], overlay: Overlay | None) -> dict[str, Any]:
    """A copy of a chat/completions body with the overlay applied (the body itself is not changed)."""
    if overlay is None or overlay.is_empty():
        return body
    out = dict(body)
    messages = list(body.get("messages") or [])
    if overlay.memory or overlay.harness_add or overlay.harness_remove:
        idx = next(
            (
                i
                for i, m in enumerate(messages)
                if isinstance(m, dict) and m.get("role") in ("system", "developer")
            ),
            None,
        )
        if idx is None:
            text = edit_system_prompt("", overlay)
            if text:
                messages.insert(0, {"role": "system", "content": text})
        else:
            msg = dict(messages[idx])
            msg["content"] = edit_system_prompt(_system_text(msg.get("content")), overlay)
            messages[idx] = msg
        out["messages"] = messages
    if overlay.tools and isinstance(body.get("tools"), list):
        out["tools"] = edit_tools(body["tools"], overlay)
    renames = renamed_forward(overlay)
    if renames:
        choice = body.get("tool_choice")
        fn = choice.get("function") if isinstance(choice, dict) else None
        if isinstance(fn, dict) and fn.get("name") in renames:
            out["tool_choice"] = {**choice, "function": {**fn, "name": renames[fn["name"]]}}
        out["messages"] = [_rename_calls(m, renames) for m in out.get("messages") or messages]
    return out


def renamed_forward(overlay: Overlay | None) -> dict[str, str]:
    """The agent's tool name -> the name the backend sees, for every tool the overlay renames."""
    if overlay is None:
        return {}
    return {c.tool: c.rename_to for c in overlay.tools if c.rename_to and c.rename_to != c.tool}


def _rename_calls(message: Any, names: dict[str, str]) -> Any:
    """A chat message whose tool calls use ``names`` (other messages as they are)."""
    if not isinstance(message, dict) or not isinstance(message.get("tool_calls"), list):
        return message
    if not any(_call_name(c) in names for c in message["tool_calls"]):
        return message
    calls = [
        {**c, "function": {**c["function"], "name": names[_call_name(c)]}} if _call_name(c) in names else c
        for c in message["tool_calls"]
    ]
    return {**message, "tool_calls": calls}


def _call_name(call: Any) -> Any:
    fn = call.get("function") if isinstance(call, dict) else None
    return fn.get("name") if isinstance(fn, dict) else None


def renamed_back(overlay: Overlay | None) -> dict[str, str]:
    """New tool name -> the agent's name, for every tool the overlay renamed."""
    if overlay is None:
        return {}
    return {c.rename_to: c.tool for c in overlay.tools if c.rename_to and c.rename_to != c.tool}


def restore_tool_names(message: dict[str, Any], overlay: Overlay | None) -> dict[str, Any]:
    """An assistant message with calls to renamed tools given the agent's names again."""
    back = renamed_back(overlay)
    if not back:
        return message
    return _rename_calls(message, back)


def restore_completion(resp: dict[str, Any], overlay: Overlay | None) -> bool:
    """Give every choice of a ``chat.completion`` the agent's tool names again, in place; True if changed."""
    return _restore_in_place(resp, overlay, "message")


def restore_chunk(chunk: dict[str, Any], overlay: Overlay | None) -> bool:
    """The same for one streamed ``chat.completion.chunk`` (a tool call's name rides in one delta, whole,
    as OpenAI-compatible servers send it), in place; True if changed."""
    return _restore_in_place(chunk, overlay, "delta")


def _restore_in_place(obj: dict[str, Any], overlay: Overlay | None, field: str) -> bool:
    back = renamed_back(overlay)
    if not back:
        return False
    changed = False
    for choice in obj.get("choices") or ():
        part = choice.get(field) if isinstance(choice, dict) else None
        if not isinstance(part, dict):
            continue
        fixed = _rename_calls(part, back)
        if fixed is not part:
            choice[field] = fixed
            changed = True
    return changed
