"""A request part of the wrong type is a 400 in the called API's own format, naming the part: never a 500,
never a value read one way by the proxy and another way by the backend (``"stream": "false"``), never a
silent rewrite (an object sent where text belongs). Well-formed neighbours of each case still pass."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.pipeline.proxy.conftest import KEY, LiveProxy

AUTH = {"authorization": f"Bearer {KEY}"}
USER = [{"role": "user", "content": "hi"}]
CHAT: dict[str, Any] = {"model": "plain", "messages": USER}
ANTHROPIC: dict[str, Any] = {"model": "plain", "max_tokens": 16, "messages": USER}
RESPONSES: dict[str, Any] = {"model": "plain", "input": "hi"}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}


def _user(*blocks: Any) -> dict[str, Any]:
    return {**ANTHROPIC, "messages": [{"role": "user", "content": list(blocks)}]}


BAD: list[tuple[str, str, dict[str, Any], str]] = [
    # chat completions: types checked strictly, as the OpenAI API does
    ("chat", "/v1/chat/completions", {**CHAT, "stream": "false"}, "stream"),
    ("chat", "/v1/chat/completions", {**CHAT, "n": "2"}, "n"),
    ("chat", "/v1/chat/completions", {**CHAT, "max_tokens": 5.5}, "max_tokens"),
    ("chat", "/v1/chat/completions", {**CHAT, "max_tokens": 10**30}, "max_tokens"),
    ("chat", "/v1/chat/completions", {**CHAT, "seed": 2**70}, "seed"),
    ("chat", "/v1/chat/completions", {**CHAT, "logprobs": "true"}, "logprobs"),
    ("chat", "/v1/chat/completions", {**CHAT, "tools": [TOOL], "tool_choice": "sometimes"}, "tool_choice"),
    (
        "chat",
        "/v1/chat/completions",
        {**CHAT, "messages": [{"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}]},
        "messages[0].content[0].text",
    ),
    (
        "chat",
        "/v1/chat/completions",
        {**CHAT, "messages": [{"role": "user", "content": ["hi"]}]},
        "messages[0].content[0]",
    ),
    (
        "chat",
        "/v1/chat/completions",
        {**CHAT, "messages": [{"role": "user", "content": 5}]},
        "messages[0].content",
    ),
    (
        "chat",
        "/v1/chat/completions",
        {**CHAT, "messages": [*USER, {"role": "tool", "content": "42"}]},
        "messages[1].tool_call_id",
    ),
    ("completions", "/v1/completions", {"model": "plain", "prompt": "x", "stream": "no"}, "stream"),
    ("completions", "/v1/completions", {"model": "plain", "prompt": "x", "seed": 2**64}, "seed"),
    # Anthropic messages: blocks are translated, so the proxy is the only one to check them
    ("anthropic", "/v1/messages", {**ANTHROPIC, "stream": "false"}, "stream"),
    ("anthropic", "/v1/messages", {**ANTHROPIC, "max_tokens": 0}, "max_tokens"),
    ("anthropic", "/v1/messages", {**ANTHROPIC, "max_tokens": 10**30}, "max_tokens"),
    ("anthropic", "/v1/messages", _user({"type": "image", "source": "x"}), "messages[0].content[0].source"),
    ("anthropic", "/v1/messages", _user({"type": "image", "source": [1]}), "messages[0].content[0].source"),
    (
        "anthropic",
        "/v1/messages",
        _user({"type": "document", "source": "x"}),
        "messages[0].content[0].source",
    ),
    ("anthropic", "/v1/messages", _user({"type": "text"}), "messages[0].content[0].text"),
    ("anthropic", "/v1/messages", _user({"type": "text", "text": {"a": 1}}), "messages[0].content[0].text"),
    ("anthropic", "/v1/messages", _user("hi"), "messages[0].content[0]"),
    (
        "anthropic",
        "/v1/messages",
        {**ANTHROPIC, "system": [{"type": "text", "text": 5}]},
        "system[0].text",
    ),
    (
        "anthropic",
        "/v1/messages",
        {
            **ANTHROPIC,
            "messages": [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": "x"}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            ],
        },
        "messages[1].content[0].input",
    ),
    (
        "anthropic",
        "/v1/messages",
        {**ANTHROPIC, "tools": [{"name": "f", "input_schema": "x"}]},
        "tools[0].input_schema",
    ),
    (
        "anthropic",
        "/v1/messages",
        {**ANTHROPIC, "messages": [{"role": "assistant", "content": []}, *USER]},
        "messages[0].content",
    ),
    # Responses
    ("responses", "/v1/responses", {**RESPONSES, "stream": "false"}, "stream"),
    ("responses", "/v1/responses", {**RESPONSES, "text": {"format": "json"}}, "text.format"),
    ("responses", "/v1/responses", {**RESPONSES, "text": {"format": ["x"]}}, "text.format"),
    ("responses", "/v1/responses", {**RESPONSES, "text": {"format": {"type": "xml"}}}, "text.format.type"),
    (
        "responses",
        "/v1/responses",
        {**RESPONSES, "text": {"format": {"type": "json_schema", "name": "o", "schema": "x"}}},
        "text.format.schema",
    ),
    ("responses", "/v1/responses", {**RESPONSES, "tool_choice": {"type": "function"}}, "tool_choice.name"),
    ("responses", "/v1/responses", {**RESPONSES, "tool_choice": "sometimes"}, "tool_choice"),
    (
        "responses",
        "/v1/responses",
        {**RESPONSES, "input": [{"role": "user", "content": [{"type": "input_text", "text": 3}]}]},
        "input[0].content[0].text",
    ),
    (
        "responses",
        "/v1/responses",
        {**RESPONSES, "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]},
        "input[0].arguments",
    ),
]


def _error(resp: httpx.Response, surface: str) -> dict[str, Any]:
    assert resp.status_code == 400, (resp.status_code, resp.text)
    body = resp.json()
    if surface == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        return body["error"]
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["type"] == "invalid_request_error"
    return err


@pytest.mark.parametrize(("surface", "path", "body", "where"), BAD, ids=[f"{b[0]}-{b[3]}" for b in BAD])
def test_a_part_of_the_wrong_type_is_a_400_naming_it(
    live_proxy: LiveProxy, surface: str, path: str, body: dict[str, Any], where: str
) -> None:
    with httpx.Client(base_url=live_proxy.url, timeout=10, headers=AUTH) as http:
        err = _error(http.post(path, json=body), surface)
    assert where in err["message"], err
    if surface != "anthropic":
        assert err["param"] is not None and err["param"].startswith(where.split("[")[0].split(".")[0])


GOOD: list[tuple[str, dict[str, Any]]] = [
    ("/v1/chat/completions", {**CHAT, "temperature": 1, "max_tokens": 5, "seed": 2**63 - 1, "stream": False}),
    (
        "/v1/chat/completions",
        {**CHAT, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
    ),
    ("/v1/chat/completions", {**CHAT, "tools": [TOOL], "tool_choice": "required"}),
    ("/v1/completions", {"model": "plain", "prompt": [[104, 105], [111]], "max_tokens": 4}),
    ("/v1/messages", {**ANTHROPIC, "messages": [*USER, {"role": "assistant", "content": []}]}),  # prefill
    ("/v1/messages", _user({"type": "document", "source": {"type": "text", "data": "a memo"}})),
    ("/v1/responses", {**RESPONSES, "text": {"format": {"type": "json_object"}}}),
    ("/v1/responses", {**RESPONSES, "tools": [{"type": "function", "name": "f"}], "tool_choice": "auto"}),
]


@pytest.mark.parametrize(("path", "body"), GOOD)
def test_well_formed_neighbours_still_pass(live_proxy: LiveProxy, path: str, body: dict[str, Any]) -> None:
    with httpx.Client(base_url=live_proxy.url, timeout=10, headers=AUTH) as http:
        resp = http.post(path, json=body)
    assert resp.status_code == 200, resp.text
