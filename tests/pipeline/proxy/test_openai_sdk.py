"""The real ``openai`` SDK against a live proxy and the echo backend; events read back from the broker."""

from __future__ import annotations

import json

import openai

from sluice.events import StepEvent, decode
from tests.pipeline.proxy.conftest import BACKEND_KEY, KEY, LiveProxy

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def test_chat_streaming_and_not_with_tools_tokens_and_no_secrets(live_proxy: LiveProxy) -> None:
    client = openai.OpenAI(base_url=live_proxy.url + "/v1", api_key=KEY, max_retries=0)

    # 1. non-streaming tool call, token ids recorded but not shown to the agent
    first = client.chat.completions.with_raw_response.create(
        model="tok-small",
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "weather in Oslo?"},
        ],
        tools=TOOLS,
        tool_choice="required",
        temperature=0.3,
        seed=7,
        extra_headers={"x-sluice-session-id": "sess-1", "user-agent": "pytest-agent"},
    )
    tid = first.headers["x-sluice-trajectory-id"]
    r1 = first.parse()
    call = r1.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {
        "city": "weather in Oslo?"
    }
    assert r1.choices[0].logprobs is None and "token_ids" not in r1.choices[0].model_extra
    assert "prompt_token_ids" not in (r1.model_extra or {})

    # 2. streaming turn that sends the tool result back (history links it to the same trajectory)
    history = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "weather in Oslo?"},
        r1.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"},
    ]
    chunks = list(
        client.chat.completions.create(model="tok-small", messages=history, tools=TOOLS, stream=True)
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Echo: weather in Oslo?"
    assert all(not c.choices or c.choices[0].logprobs is None for c in chunks)
    assert not any(c.usage for c in chunks)  # the proxy asked for usage; the agent did not

    # 3. streaming with an agent-requested usage chunk and n=2 (no tokens recorded on this backend)
    multi = list(
        client.chat.completions.create(
            model="plain",
            messages=[{"role": "user", "content": "two please"}],
            n=2,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    texts = {i: "" for i in (0, 1)}
    for c in multi:
        for ch in c.choices:
            texts[ch.index] += ch.delta.content or ""
    assert texts == {0: "Echo: two please", 1: "Echo[1]: two please"}
    assert multi[-1].usage is not None and multi[-1].usage.completion_tokens > 0

    raw = live_proxy.steps(3)
    assert len(raw) == 3
    for _, value in raw:
        assert KEY.encode() not in value and BACKEND_KEY.encode() not in value
        assert b"authorization" not in value.lower()
    events = [decode(v) for _, v in raw]
    assert all(isinstance(e, StepEvent) for e in events)
    steps = sorted((e for e in events if e.trajectory_id == tid), key=lambda e: e.step_index)
    assert [e.step_index for e in steps] == [0, 1]
    s0, s1 = steps
    assert s0.tenant == "acme" and s0.session_id == "sess-1"
    assert s0.governance.consent.training is True and s0.governance.data_class == "internal"
    assert s0.metadata.request_headers == {"x-sluice-session-id": "sess-1", "user-agent": "pytest-agent"}
    assert s0.metadata.sampling.temperature == 0.3 and s0.metadata.sampling.seed == 7
    assert s0.metadata.backend == "echo-tokens" and s0.metadata.model_version == "echo-v1"
    assert s0.metadata.backend_fingerprint == "echo-1" and s0.metadata.harness_fingerprint
    assert s0.metadata.gen_ai.usage_input_tokens > 0 and s0.metadata.gen_ai.finish_reasons == ["tool_calls"]
    assert s0.observation.tools == TOOLS and s0.observation.tools_fingerprint
    choice = s0.action.choices[0]
    assert choice.message.tool_calls[0].name == "get_weather"
    assert len(choice.token_ids) == len(choice.logprobs) > 0
    assert s0.action.prompt_token_prefix_len == 0 and len(s0.action.prompt_token_ids) > 0

    # step 1: only the tool result is new; tools unchanged are not repeated; tokens extend the prefix
    assert s1.observation.prefix_message_count == 3
    assert [m.role for m in s1.observation.messages] == ["tool"]
    assert (
        s1.observation.tools is None and s1.observation.tools_fingerprint == s0.observation.tools_fingerprint
    )
    assert s1.metadata.stream is True and s1.metadata.time_to_first_token_ms is not None
    assert s1.action.choices[0].message.content == "Echo: weather in Oslo?"
    full_prev = len(s0.action.prompt_token_ids) + len(choice.token_ids)
    assert s1.action.prompt_token_prefix_len == full_prev
    assert len(s1.action.choices[0].token_ids) == len(s1.action.choices[0].logprobs)

    (other,) = [e for e in events if e.trajectory_id != tid]
    assert [c.message.content for c in other.action.choices] == ["Echo: two please", "Echo[1]: two please"]
    assert other.action.choices[0].token_ids is None and other.metadata.sampling.n == 2


def test_completions_responses_and_models(live_proxy: LiveProxy) -> None:
    client = openai.OpenAI(base_url=live_proxy.url + "/v1", api_key=KEY, max_retries=0)
    tid = "traj-completions-1"
    headers = {"x-sluice-trajectory-id": tid}

    done = client.completions.create(model="tok-c", prompt="Once upon", max_tokens=64, extra_headers=headers)
    assert done.choices[0].text == "Echo: Once upon" and done.choices[0].logprobs is None
    streamed = "".join(
        c.choices[0].text
        for c in client.completions.create(model="tok-c", prompt="a time", stream=True, extra_headers=headers)
        if c.choices
    )
    assert streamed == "Echo: a time"

    resp = client.responses.create(
        model="plain", instructions="Be nice.", input="hi there", extra_headers=headers
    )
    assert resp.output_text == "Echo: hi there"
    resp2 = client.responses.create(
        model="plain",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "call it"}]}],
        tools=[
            {
                "type": "function",
                "name": "lookup",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ],
        tool_choice="required",
        extra_headers=headers,
    )
    fc = [o for o in resp2.output if o.type == "function_call"][0]
    assert fc.name == "lookup" and json.loads(fc.arguments) == {"q": "call it"}
    with client.responses.stream(model="plain", input="stream me", extra_headers=headers) as stream:
        final = stream.get_final_response()
    assert final.output_text == "Echo: stream me"

    models = {m.id for m in client.models.list()}
    assert "echo-1" in models

    events = live_proxy.events(5)
    steps = sorted((e for e in events if e.trajectory_id == f"acme~{tid}"), key=lambda e: e.step_index)
    assert [e.step_index for e in steps] == [0, 1, 2, 3, 4]
    c0, c1 = steps[0], steps[1]
    assert (
        c0.observation.prompt_text == "Once upon" and c0.metadata.gen_ai.operation_name == "text_completion"
    )
    assert c0.action.choices[0].token_ids and len(c0.action.choices[0].logprobs) == len(
        c0.action.choices[0].token_ids
    )
    assert c1.metadata.stream and c1.action.choices[0].message.content == "Echo: a time"
    r0 = steps[2]
    assert r0.metadata.gen_ai.operation_name == "responses"
    assert [m.role for m in r0.observation.messages] == ["system", "user"]
    assert steps[3].action.choices[0].message.tool_calls[0].name == "lookup"
    assert steps[4].metadata.stream and steps[4].action.choices[0].message.content == "Echo: stream me"
