"""The event protocol: round trips, schema, prefix hashing and context reconstruction."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from sluice.events import (
    OTEL_GENAI_NAMES,
    REPLAY_GRADES,
    Action,
    Choice,
    DeadLetter,
    Message,
    Observation,
    RewardEvent,
    StepEvent,
    decode,
    encode,
    grade_at_least,
    json_schema,
    message_hash,
    reconstruct_messages,
    trajectory_version_id,
)
from sluice.step_refs import compact_step_reasons


def _step(i: int, new: list[Message], prefix: list[Message], reply: str) -> StepEvent:
    return StepEvent(
        trajectory_id="t1",
        tenant="acme",
        step_index=i,
        observation=Observation(
            messages=new, prefix_hash=message_hash(prefix), prefix_message_count=len(prefix)
        ),
        action=Action(choices=[Choice(message=Message(role="assistant", content=reply))]),
    )


def test_round_trip_and_discriminator() -> None:
    step = _step(0, [Message(role="user", content="hi")], [], "hello")
    back = decode(encode(step))
    assert isinstance(back, StepEvent) and back == step
    reward = decode(b'{"event_type":"reward","trajectory_id":"t1","tenant":"a","reward":{"value":1.0}}')
    assert isinstance(reward, RewardEvent) and reward.reward.value == 1.0


def test_wire_form_is_compact_json_without_nulls_byte_for_byte() -> None:
    step = _step(2, [Message(role="user", content='Grüße, 東京 \u2028 "q" 😀')], [], "ok")
    step.action.choices[0].logprobs = [-0.5, 1e-7, 3.0]
    data = encode(step)
    assert isinstance(data, bytes) and data == step.model_dump_json(exclude_none=True).encode()
    assert b"null" not in data and decode(data) == step


def test_bad_events_raise() -> None:
    with pytest.raises(ValidationError):
        decode(b'{"event_type":"step","trajectory_id":"t"}')
    with pytest.raises(ValidationError):
        decode(b"not json")


def test_schema_covers_every_event() -> None:
    schema = json.dumps(json_schema())
    for name in ("StepEvent", "RewardEvent", "TrajectoryEndEvent", "Trajectory", "DeadLetter"):
        assert name in schema


def test_message_hash_chains() -> None:
    a = [Message(role="user", content="x")]
    b = [Message(role="assistant", content="y"), Message(role="user", content="z")]
    assert message_hash(a + b) == message_hash(b, message_hash(a))


def test_reconstruct_from_deltas() -> None:
    u1, a1 = Message(role="user", content="q1"), Message(role="assistant", content="r1")
    u2 = Message(role="user", content="q2")
    steps = [_step(0, [u1], [], "r1"), _step(1, [u2], [u1, a1], "r2")]
    full = reconstruct_messages(steps)
    assert [m.content for m in full] == ["q1", "r1", "q2", "r2"]


def test_otel_names() -> None:
    step = _step(0, [], [], "x")
    step.metadata.gen_ai.request_model = "m"
    step.metadata.gen_ai.usage_input_tokens = 3
    attrs = step.metadata.gen_ai.otel_attributes()
    assert attrs["gen_ai.request.model"] == "m"
    assert attrs["gen_ai.usage.input_tokens"] == 3
    assert attrs["gen_ai.operation.name"] == "chat"
    step.metadata.gen_ai.finish_reasons = ["tool_calls"]
    step.metadata.gen_ai.operation_name = "messages"
    step.metadata.gen_ai.conversation_id = "c-1"
    attrs = step.metadata.gen_ai.otel_attributes()
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_calls"] and "gen_ai.finish.reasons" not in attrs
    assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.conversation.id"] == "c-1"
    assert set(attrs) <= set(OTEL_GENAI_NAMES.values())


def test_trajectory_version_id() -> None:
    assert trajectory_version_id("acme~run-7", 3) == "acme~run-7:v3"


def test_replay_grades_best_first() -> None:
    assert REPLAY_GRADES == ("deterministic", "approximate", "non_replayable")
    for i, better in enumerate(REPLAY_GRADES):
        for worse in REPLAY_GRADES[i:]:
            assert grade_at_least(better, worse)
        for best in REPLAY_GRADES[:i]:
            assert not grade_at_least(better, best)


def test_dead_letter_builder() -> None:
    letter = DeadLetter.of(
        "redact",
        "boom",
        "ValueError",
        source_topic="steps.raw",
        source_partition=2,
        source_offset=7,
        key=b"acme~t\xff",
        original=b"{not json",
    )
    assert (letter.stage, letter.reason, letter.error_type) == ("redact", "boom", "ValueError")
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == ("steps.raw", 2, 7)
    assert letter.key == "acme~t\\xff"
    assert letter.original_b64 == "e25vdCBqc29u"
    assert decode(encode(letter)) == letter
    bare = DeadLetter.of("proxy", "unrecordable", key="acme~t")
    assert (bare.key, bare.original_b64, bare.error_type, bare.source_topic) == ("acme~t", "", "", "")
    assert (bare.source_partition, bare.source_offset) == (None, None)


def test_step_reasons_merge_into_ranges_so_a_header_stays_flat() -> None:
    reasons = [f"sampling_stochastic:{i}" for i in range(50)] + [
        "side_effect:search@2",
        "side_effect:search@5",
    ]
    reasons += ["side_effect:search@6", "model_unknown:7", "content_dropped"]
    assert compact_step_reasons(reasons) == [
        "sampling_stochastic:0-49",
        "side_effect:search@2,5-6",
        "model_unknown:7",
        "content_dropped",
    ]
    assert compact_step_reasons(["sampling_stochastic:0"]) == ["sampling_stochastic:0"]
