"""SSE splitting and rebuilding completions from stream chunks (pure)."""

from __future__ import annotations

import json

from pipeline.proxy.forwarding.chat_stream_assembler import ChatStreamAssembler
from pipeline.proxy.openai_completions.assembler import CompletionStreamAssembler
from pipeline.proxy.surfaces.sse import SseSplitter, event_data


def test_splitter_handles_any_chunking_and_crlf() -> None:
    wire = b'data: {"a": 1}\r\n\r\ndata: {"a": 2}\n\n: keep-alive\n\nevent: x\ndata: {"a":\ndata: 3}\n\ndata: [DONE]\n\n'
    for size in (1, 3, 7, len(wire)):
        splitter = SseSplitter()
        events = []
        for i in range(0, len(wire), size):
            events += splitter.feed(wire[i : i + size])
        events += splitter.tail()
        payloads = [event_data(e) for e in events]
        assert payloads == [b'{"a": 1}', b'{"a": 2}', None, b'{"a":\n3}', b"[DONE]"]


def _chunk(delta: dict, index: int = 0, **extra) -> dict:
    return {"id": "chatcmpl-1", "model": "m", "choices": [{"index": index, "delta": delta, **extra}]}


def test_chat_assembler_merges_tool_call_deltas_tokens_and_usage() -> None:
    asm = ChatStreamAssembler()
    chunks = [
        {
            **_chunk({"role": "assistant", "content": ""}),
            "prompt_token_ids": [1, 2, 3],
            "system_fingerprint": "fp",
        },
        _chunk({"content": "Let me "}, token_ids=[10], logprobs={"content": [{"logprob": -0.1}]}),
        _chunk({"content": "check."}, token_ids=[11], logprobs={"content": [{"logprob": -0.2}]}),
        _chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "c1", "type": "function", "function": {"name": "get", "arguments": ""}}
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}, token_ids=[12]),
        _chunk({"tool_calls": [{"index": 1, "function": {"name": "put", "arguments": "{}"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}),
        _chunk({}, finish_reason="tool_calls"),
        _chunk({"content": "other"}, index=1),
        _chunk({}, index=1, finish_reason="stop"),
        {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    for i, c in enumerate(chunks):
        asm.feed(c, now=float(i))
    out = asm.result()
    c0, c1 = out["choices"]
    assert c0["message"]["content"] == "Let me check."
    calls = c0["message"]["tool_calls"]
    assert [(t["id"], t["function"]["name"], json.loads(t["function"]["arguments"])) for t in calls[:1]] == [
        ("c1", "get", {"city": "Oslo"})
    ]
    assert calls[1]["function"]["name"] == "put" and calls[1]["id"].startswith("call_")  # id filled, stable
    assert c0["finish_reason"] == "tool_calls" and c0["token_ids"] == [10, 11, 12]
    assert [e["logprob"] for e in c0["logprobs"]["content"]] == [-0.1, -0.2]
    assert c1["message"] == {"role": "assistant", "content": "other"} and c1["finish_reason"] == "stop"
    assert out["usage"]["completion_tokens"] == 4 and out["prompt_token_ids"] == [1, 2, 3]
    assert out["system_fingerprint"] == "fp" and asm.first_token_at == 1.0 and asm.finished_all()


def test_completion_assembler() -> None:
    asm = CompletionStreamAssembler()
    asm.feed({"id": "c", "choices": [{"index": 0, "text": "Hel"}]})
    asm.feed(
        {
            "id": "c",
            "choices": [
                {
                    "index": 0,
                    "text": "lo",
                    "finish_reason": "stop",
                    "token_ids": [1, 2],
                    "prompt_token_ids": [9],
                    "logprobs": {"token_logprobs": [-1.0, None]},
                }
            ],
        }
    )
    out = asm.result()
    assert out["choices"][0]["text"] == "Hello" and out["choices"][0]["token_ids"] == [1, 2]
    assert out["choices"][0]["logprobs"] == {"token_logprobs": [-1.0, 0.0]} and out["choices"][0][
        "prompt_token_ids"
    ] == [9]
