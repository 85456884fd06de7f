"""Which fields of each event carry text, and how each is walked, in place, on the event's JSON object.

The walk runs on the object as decoded from the wire (fields left at their default may be absent) or
on a ``model_dump()``; the model validates the result once, after the walk.

Every text a step carries: observation messages (string content and content parts, tool-call
arguments, participant names, unknown extra fields such as ``reasoning_content``), tool definitions,
the completion prompt, hidden state, the action's choices, tool results, upstream error text,
feedback details and reward critiques. Token ids are text too: when a choice's message had something
redacted its ``token_ids`` are dropped, and ``prompt_token_ids`` are dropped when the observation had
(the logprobs stay; they reveal nothing). Ids, hashes, metadata and allowlisted headers are not free
text and are left as they are.
"""

from __future__ import annotations

from typing import Any

from governance.redaction.redaction_pass import RedactionPass

_MESSAGE_KNOWN = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_TOOL_CALL_KNOWN = frozenset({"id", "type", "name", "arguments"})


def walk_message(p: RedactionPass, m: dict[str, Any]) -> None:
    content = m.get("content")
    if isinstance(content, str):
        m["content"] = p.payload(content)
    elif isinstance(content, list):
        m["content"] = p.parts(content)
    if isinstance(m.get("name"), str):
        m["name"] = p.text(m["name"], ["name"])
    for call in m.get("tool_calls") or ():
        if isinstance(call.get("arguments"), str):
            call["arguments"] = p.payload(call["arguments"], [call.get("name") or "arguments"])
        for k in call.keys() - _TOOL_CALL_KNOWN:
            call[k] = p.value(call[k], [k])
    for k in m.keys() - _MESSAGE_KNOWN:
        m[k] = p.value(m[k], [k])


def _items(d: dict[str, Any], key: str) -> list[Any]:
    """A list field of a wire object: absent or null reads as empty (its default)."""
    return d.get(key) or []


def walk_step(p: RedactionPass, d: dict[str, Any]) -> None:
    obs = d.get("observation") or {}
    action = d.get("action") or {}
    before = p.total_redacted
    for m in _items(obs, "messages"):
        walk_message(p, m)
    if obs.get("tools") is not None:
        obs["tools"] = p.value(obs["tools"], ["tools"])
    if isinstance(obs.get("prompt_text"), str):
        obs["prompt_text"] = p.payload(obs["prompt_text"])
    if p.total_redacted != before and "prompt_token_ids" in action:
        action["prompt_token_ids"] = None

    hidden = d.get("hidden_state")
    if isinstance(hidden, str):
        d["hidden_state"] = p.payload(hidden, ["hidden_state"])
    elif hidden is not None:
        d["hidden_state"] = p.value(hidden, ["hidden_state"])

    for choice in _items(action, "choices"):
        before = p.total_redacted
        walk_message(p, choice["message"])
        if p.total_redacted != before and "token_ids" in choice:
            choice["token_ids"] = None

    result = d.get("action_result") or {}
    for tr in _items(result, "tool_results"):
        content = tr.get("content")
        ctx = [tr["tool_name"]] if tr.get("tool_name") else None
        if isinstance(content, str):
            tr["content"] = p.payload(content, ctx)
        elif isinstance(content, list):
            tr["content"] = p.parts(content)
    if isinstance(result.get("error"), str):
        result["error"] = p.payload(result["error"], ["error"])
    for fb in _items(result, "feedback"):
        if isinstance(fb.get("detail"), str):
            fb["detail"] = p.text(fb["detail"], ["feedback"])
    for reward in _items(d, "rewards"):
        walk_reward(p, reward)


def walk_reward(p: RedactionPass, r: dict[str, Any]) -> None:
    if isinstance(r.get("critique"), str):
        r["critique"] = p.text(r["critique"], ["critique"])


def walk_end(p: RedactionPass, d: dict[str, Any]) -> None:
    if isinstance(d.get("outcome"), str):
        d["outcome"] = p.text(d["outcome"], ["outcome"])
