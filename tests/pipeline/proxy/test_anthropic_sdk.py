"""The real ``anthropic`` SDK against a live proxy: messages streaming and not, tool use, URL-prefix ids."""

from __future__ import annotations

import anthropic

from tests.pipeline.proxy.conftest import KEY, LiveProxy

TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    }
]


def test_messages_with_tool_use_streaming_and_not(live_proxy: LiveProxy) -> None:
    tid = "claude-run-42"
    # the SDK appends /v1/messages to the root it is given: the trajectory prefix goes in the root
    client = anthropic.Anthropic(base_url=f"{live_proxy.url}/t/{tid}", api_key=KEY, max_retries=0)
    first = client.messages.create(
        model="tok-claude",
        max_tokens=256,
        system="You are a weather bot.",
        messages=[{"role": "user", "content": "Oslo"}],
        tools=TOOLS,
        tool_choice={"type": "any"},
    )
    assert first.stop_reason == "tool_use"
    use = [b for b in first.content if b.type == "tool_use"][0]
    assert use.name == "get_weather" and use.input == {"city": "Oslo", "days": 42}
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0

    turn2 = [
        {"role": "user", "content": "Oslo"},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": "sunny"},
                {"type": "text", "text": "and?"},
            ],
        },
    ]
    with client.messages.stream(
        model="tok-claude", max_tokens=256, system="You are a weather bot.", messages=turn2, tools=TOOLS
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Echo: and?" and final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0

    # streaming tool use: input_json_delta pieces assemble into the tool input
    with client.messages.stream(
        model="tok-claude",
        max_tokens=64,
        messages=[{"role": "user", "content": "Bergen"}],
        tools=TOOLS,
        tool_choice={"type": "tool", "name": "get_weather"},
    ) as stream:
        streamed = stream.get_final_message()
    blocks = [b for b in streamed.content if b.type == "tool_use"]
    assert blocks and blocks[0].input == {"city": "Bergen", "days": 42} and streamed.stop_reason == "tool_use"

    # x-api-key (older clients) is accepted as well
    legacy = anthropic.Anthropic(
        base_url=live_proxy.url,
        api_key="unused",
        default_headers={"x-api-key": KEY, "authorization": ""},
        max_retries=0,
    )
    legacy_reply = legacy.messages.create(
        model="plain", max_tokens=32, messages=[{"role": "user", "content": "hey"}]
    )
    assert legacy_reply.content[0].text == "Echo: hey"

    events = live_proxy.events(4)
    steps = sorted((e for e in events if e.trajectory_id == f"acme~{tid}"), key=lambda e: e.step_index)
    assert [e.step_index for e in steps] == [0, 1, 2]
    s0, s1, s2 = steps
    assert s0.metadata.gen_ai.provider_name == "anthropic" and s0.metadata.gen_ai.operation_name == "messages"
    assert [m.role for m in s0.observation.messages] == ["system", "user"]
    assert s0.action.choices[0].message.tool_calls[0].id == use.id
    assert s0.action.choices[0].token_ids  # token ids recorded through the Anthropic surface too
    # the tool_use/tool_result round trip extends the history: only the new messages are carried
    assert s1.observation.prefix_message_count == 3
    assert [(m.role, m.content) for m in s1.observation.messages] == [("tool", "sunny"), ("user", "and?")]
    assert s1.metadata.stream and s1.action.prompt_token_prefix_len > 0
    assert s2.metadata.stream and s2.action.choices[0].message.tool_calls[0].name == "get_weather"
    (other,) = [e for e in events if e.trajectory_id != f"acme~{tid}"]
    assert other.tenant == "acme" and other.step_index == 0


def test_models_in_the_anthropic_sdks_shape(live_proxy: LiveProxy) -> None:
    client = anthropic.Anthropic(base_url=live_proxy.url, api_key=KEY, max_retries=0)
    listed = [m.id for m in client.models.list()]
    assert "echo-1" in listed
    card = client.models.retrieve("echo-1")
    assert card.type == "model" and card.display_name == "echo-1" and card.created_at.year >= 1970
    try:
        client.models.retrieve("no-such-model")
    except anthropic.NotFoundError as err:
        assert err.body["type"] == "error" and err.body["error"]["type"] == "not_found_error"
    else:
        raise AssertionError("an unknown model must be a 404")
    bad = anthropic.Anthropic(base_url=live_proxy.url, api_key="sk-not-a-key", max_retries=0)
    try:
        bad.models.list()
    except anthropic.AuthenticationError as err:
        assert err.body["error"]["type"] == "authentication_error"
    else:
        raise AssertionError("an unknown key must be a 401")


def test_count_tokens_is_the_backends_own_count(live_proxy: LiveProxy) -> None:
    from infra.echo_reply import render_prompt

    client = anthropic.Anthropic(base_url=f"{live_proxy.url}/t/count-run", api_key=KEY, max_retries=0)
    messages = [{"role": "user", "content": "How many tokens is this?"}]
    counted = client.messages.count_tokens(model="echo-1", system="Be brief.", messages=messages)
    # the echo backend's tokenizer is UTF-8 bytes over its chat template: the exact count is known
    chat = [{"role": "system", "content": "Be brief."}, *messages]
    assert counted.input_tokens == len(render_prompt(chat).encode())
    longer = client.messages.count_tokens(
        model="echo-1", system="Be brief.", messages=[*messages, {"role": "assistant", "content": "Ten."},
                                                      {"role": "user", "content": "And now?"}],
    )  # fmt: skip
    assert longer.input_tokens > counted.input_tokens
    with_tools = client.messages.count_tokens(model="echo-1", messages=messages, tools=TOOLS)
    assert with_tools.input_tokens > 0
    try:
        client.messages.count_tokens(model="echo-1", messages=[])
    except anthropic.BadRequestError as err:
        assert err.body["error"]["type"] == "invalid_request_error"
    else:
        raise AssertionError("no messages must be a 400")
    # a count is not a step: nothing of these calls is on the steps topic
    assert live_proxy.events(0) == []
