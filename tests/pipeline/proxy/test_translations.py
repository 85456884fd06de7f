"""Anthropic messages and OpenAI responses <-> chat completions, and their stream writers (pure)."""

from __future__ import annotations

import json

import pytest

from pipeline.proxy.anthropic_messages.protocol import MessagesRequest
from pipeline.proxy.anthropic_messages.stream import AnthropicStreamWriter
from pipeline.proxy.anthropic_messages.translate import to_anthropic
from pipeline.proxy.anthropic_messages.translate import to_chat as anthropic_to_chat
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.openai_responses.protocol import ResponsesRequest
from pipeline.proxy.openai_responses.stream import ResponsesStreamWriter
from pipeline.proxy.openai_responses.translate import to_chat as responses_to_chat
from pipeline.proxy.openai_responses.translate import to_response


def _events(raw: list[bytes]) -> list[tuple[str, dict]]:
    out = []
    for item in raw:
        name, data = item.decode().strip().split("\n")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def test_anthropic_request_translation() -> None:
    body = {
        "model": "m",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "sys "}, {"type": "text", "text": "prompt"}],
        "stop_sequences": ["END"],
        "top_k": 5,
        "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm"},
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "42"}]},
                    {"type": "text", "text": "thanks"},
                ],
            },
        ],
    }
    chat = anthropic_to_chat(MessagesRequest.model_validate(body))
    assert chat["messages"][0] == {"role": "system", "content": "sys prompt"}
    assert chat["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAA"},
    }
    assert chat["messages"][2] == {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}],
    }
    assert chat["messages"][3:] == [
        {"role": "tool", "tool_call_id": "t1", "content": "42"},
        {"role": "user", "content": "thanks"},
    ]
    assert chat["tools"][0]["function"] == {"name": "f", "parameters": {"type": "object"}, "description": "d"}
    assert (chat["tool_choice"], chat["parallel_tool_calls"], chat["stop"], chat["top_k"]) == (
        "required",
        False,
        ["END"],
        5,
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"messages": [{"role": "system", "content": "x"}]},
        {"messages": [{"role": "user", "content": [{"type": "video"}]}]},
        {
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "web_search_20250305", "name": "web"}],
        },
    ],
)
def test_anthropic_untranslatable_is_a_400(bad: dict) -> None:
    with pytest.raises(ApiError) as err:
        anthropic_to_chat(MessagesRequest.model_validate({"model": "m", "max_tokens": 5, **bad}))
    assert err.value.status == 400


def test_anthropic_response_and_stream() -> None:
    resp = {
        "id": "chatcmpl-9",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "content": "hi",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": '{"a": 1}'}}],
                },
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    msg = to_anthropic(resp, "m")
    assert msg["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "c", "name": "f", "input": {"a": 1}},
    ]
    assert (msg["stop_reason"], msg["usage"], msg["id"]) == (
        "tool_use",
        {"input_tokens": 3, "output_tokens": 2},
        "msg_9",
    )

    w = AnthropicStreamWriter("m")
    raw = w.feed(
        {"id": "chatcmpl-9", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]}
    )
    raw += w.feed(
        {
            "id": "chatcmpl-9",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"a"'}}
                        ]
                    },
                }
            ],
        }
    )
    raw += w.feed(
        {
            "id": "chatcmpl-9",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
                    "finish_reason": "tool_calls",
                }
            ],
        }
    )
    raw += w.feed({"id": "chatcmpl-9", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}})
    raw += w.end(None)
    names = [n for n, _ in _events(raw)]
    assert names == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    events = _events(raw)
    assert events[4][1]["content_block"] == {"type": "tool_use", "id": "c", "name": "f", "input": {}}
    assert events[8][1]["delta"]["stop_reason"] == "tool_use" and events[8][1]["usage"]["output_tokens"] == 5
    assert [n for n, _ in _events(AnthropicStreamWriter("m").end("boom"))] == ["message_start", "error"]


def test_responses_translation_and_stream() -> None:
    body = {
        "model": "m",
        "instructions": "be kind",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "calling"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "done"},
            {"type": "reasoning", "summary": []},
        ],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "max_output_tokens": 50,
        "text": {"format": {"type": "json_object"}},
    }
    req = ResponsesRequest.model_validate(body)
    chat = responses_to_chat(req)
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "assistant", "tool"]
    assert chat["messages"][2]["content"] == "calling" and chat["messages"][2]["tool_calls"][0]["id"] == "c1"
    assert chat["max_tokens"] == 50 and chat["response_format"] == {"type": "json_object"}
    with pytest.raises(ApiError):
        responses_to_chat(
            ResponsesRequest.model_validate({"model": "m", "input": "x", "conversation": "conv_1"})
        )
    history = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "Echo: first"}]
    second = ResponsesRequest.model_validate({"model": "m", "instructions": "Now terse.", "input": "second"})
    cont = responses_to_chat(second, history)
    assert cont["messages"] == [
        {"role": "system", "content": "Now terse."},
        *history,
        {"role": "user", "content": "second"},
    ]

    out = to_response(
        {
            "id": "chatcmpl-5",
            "choices": [{"index": 0, "finish_reason": "length", "message": {"content": "abc"}}],
        },
        req,
    )
    assert (
        out["id"] == "resp_5"
        and out["status"] == "incomplete"
        and out["output"][0]["content"][0]["text"] == "abc"
    )

    w = ResponsesStreamWriter(ResponsesRequest.model_validate({"model": "m", "input": "x"}))
    raw = w.feed({"id": "chatcmpl-5", "choices": [{"index": 0, "delta": {"content": "ab"}}]})
    raw += w.feed(
        {"id": "chatcmpl-5", "choices": [{"index": 0, "delta": {"content": "c"}, "finish_reason": "stop"}]}
    )
    raw += w.end(None)
    events = _events(raw)
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    assert (
        events[-1][0] == "response.completed"
        and events[-1][1]["response"]["output"][0]["content"][0]["text"] == "abc"
    )
    assert [d["delta"] for n, d in events if n == "response.output_text.delta"] == ["ab", "c"]
