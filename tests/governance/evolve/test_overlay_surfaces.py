"""Overlay edits on every request shape the proxy accepts (Anthropic messages and OpenAI responses are
translated to chat first, then edited by ``apply_to_chat``), and the agent's tool names restored."""

from __future__ import annotations

import copy
from typing import Any

from governance.evolve.overlay_apply import (
    MEMORY_HEADER,
    apply_to_chat,
    restore_chunk,
    restore_completion,
)
from pipeline.proxy.anthropic_messages.protocol import MessagesRequest
from pipeline.proxy.anthropic_messages.translate import to_chat as _anthropic_to_chat
from pipeline.proxy.openai_responses.protocol import ResponsesRequest
from pipeline.proxy.openai_responses.translate import to_chat as _responses_to_chat
from sluice.evolution import HarnessItem, MemoryEntry, Overlay, ToolSchemaChange, harness_item_id

CITY = {"type": "object", "properties": {"city_code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}


def anthropic_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    return _anthropic_to_chat(MessagesRequest.model_validate(body))


def responses_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    return _responses_to_chat(ResponsesRequest.model_validate(body))


def overlay(**kw: Any) -> Overlay:
    base: dict[str, Any] = {
        "tenant": "acme",
        "memory": [MemoryEntry(text="Refunds take 5 business days.")],
        "harness_add": [HarnessItem(text="Always confirm the order id.")],
        "harness_remove": [harness_item_id("Be terse.")],
        "tools": [
            ToolSchemaChange(
                tool="get_weather",
                rename_to="lookup_weather",
                description="Weather by IATA code",
                parameters=CITY,
            )
        ],
    }
    return Overlay(**{**base, **kw})


def anthropic_body(system: Any = "You help.\nBe terse.") -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 32,
        "system": system,
        "tools": [
            {"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}},
            {"name": "search", "input_schema": {"type": "object"}},
        ],
        "tool_choice": {"type": "tool", "name": "get_weather"},
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]},
        ],
    }


def responses_body(instructions: str | None = "You help.\nBe terse.") -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather",
                "parameters": {"type": "object"},
            },
            {"type": "function", "name": "search", "parameters": {"type": "object"}},
        ],
        "tool_choice": {"type": "function", "name": "get_weather"},
    }
    if instructions is not None:
        body["instructions"] = instructions
    return body


EDITED_SYSTEM = [
    "You help.",
    "Always confirm the order id.",
    MEMORY_HEADER,
    "- Refunds take 5 business days.",
]


def _assert_edited(chat: dict[str, Any], before: dict[str, Any]) -> None:
    system = next(m for m in chat["messages"] if m["role"] in ("system", "developer"))
    assert system["content"].splitlines() == EDITED_SYSTEM
    fn = chat["tools"][0]["function"]
    assert (fn["name"], fn["description"], fn["parameters"]) == (
        "lookup_weather",
        "Weather by IATA code",
        CITY,
    )
    assert chat["tools"][1] == before["tools"][1]  # a tool the overlay does not name is left alone
    assert chat["tool_choice"]["function"]["name"] == "lookup_weather"
    calls = [c for m in chat["messages"] for c in m.get("tool_calls") or []]
    assert [c["function"]["name"] for c in calls] == ["lookup_weather"]


def test_anthropic_request_is_edited_as_chat() -> None:
    for system in ("You help.\nBe terse.", [{"type": "text", "text": "You help.\nBe terse."}]):
        body = anthropic_body(system)
        before = copy.deepcopy(body)
        chat = anthropic_to_chat(body)
        _assert_edited(apply_to_chat(chat, overlay()), anthropic_to_chat(before))
        assert body == before  # the agent's request is not changed


def test_responses_request_is_edited_as_chat() -> None:
    with_system_item = responses_body(None)
    with_system_item["input"].insert(
        0, {"type": "message", "role": "developer", "content": "You help.\nBe terse."}
    )
    for body in (responses_body(), with_system_item):
        chat = responses_to_chat(body)
        _assert_edited(apply_to_chat(chat, overlay()), responses_to_chat(body))
    bare = apply_to_chat(responses_to_chat(responses_body(None)), overlay())
    assert bare["messages"][0] == {"role": "system", "content": "\n".join(EDITED_SYSTEM[1:])}


def test_chat_renames_forced_choice_and_earlier_calls() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    }
    out = apply_to_chat(body, overlay(memory=[], harness_add=[], harness_remove=[]))
    assert out["tool_choice"] == {"type": "function", "function": {"name": "lookup_weather"}}
    assert out["messages"][1]["tool_calls"][0]["function"]["name"] == "lookup_weather"
    assert body["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert "system" not in {m["role"] for m in out["messages"]}  # no harness or memory: no system message


def test_restore_completion_and_chunks() -> None:
    ov = overlay()
    resp = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "function": {"name": "lookup_weather", "arguments": "{}"}},
                        {"id": "b", "function": {"name": "search", "arguments": "{}"}},
                    ],
                },
            }
        ]
    }
    assert restore_completion(resp, ov)
    names = [c["function"]["name"] for c in resp["choices"][0]["message"]["tool_calls"]]
    assert names == ["get_weather", "search"]
    assert not restore_completion(resp, ov)  # nothing left to rename
    head = {
        "choices": [
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "lookup_weather"}}]}}
        ]
    }
    args = {
        "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}}]
    }
    assert restore_chunk(head, ov)
    assert head["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert not restore_chunk(args, ov)
    assert not restore_chunk(head, None)


def test_no_overlay_or_empty_overlay_changes_nothing() -> None:
    body = anthropic_to_chat(anthropic_body())
    assert apply_to_chat(body, None) is body
    assert apply_to_chat(body, Overlay(tenant="acme")) is body
