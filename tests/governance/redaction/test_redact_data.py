"""The wire path: ``Redactor.redact_data`` on JSON objects as producers send them (defaults omitted,
fields in any order), against ``redact_event`` on the same event."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from governance.redaction import RedactionError, Redactor
from sluice.events import RewardEvent, StepEvent, TrajectoryEndEvent, encode
from tests.governance.redaction.test_redactor import RAW, full_step


def test_wire_object_redacts_like_the_event(redactor: Redactor) -> None:
    step = full_step()
    from_event, state_e = redactor.redact_event(step, None)
    from_wire, state_w = redactor.redact_data(json.loads(encode(step)), None)
    assert isinstance(from_wire, StepEvent)
    counts = {
        "governance": {"redaction_report": {"cached_texts", "analysed_texts"}}
    }  # the 2nd hits the cache
    assert from_wire.model_dump(exclude=counts) == from_event.model_dump(exclude=counts)
    assert state_w == state_e
    wire = encode(from_wire).decode()
    assert not any(value in wire for value in RAW)


def test_minimal_objects_with_defaults_left_out(redactor: Redactor) -> None:
    """A producer may leave out every field that has a default: nothing is missed, nothing fails."""
    step = {"event_type": "step", "trajectory_id": "t-1", "tenant": "acme", "step_index": 0,
            "observation": {"messages": [{"role": "user", "content": "mail carol@example.com"}]}}  # fmt: skip
    out, state = redactor.redact_data(step)
    assert isinstance(out, StepEvent) and state.size == 1
    assert out.observation.messages[0].content == "mail <EMAIL_ADDRESS_1>"
    assert out.governance.redaction == "redacted"
    assert out.governance.redaction_report.entities == {"EMAIL_ADDRESS": 1}

    bare = {"event_type": "step", "trajectory_id": "t-2", "tenant": "acme", "step_index": 3}
    out, state = redactor.redact_data(bare)
    assert isinstance(out, StepEvent) and out.step_index == 3 and state.size == 0

    end = {"event_type": "end", "trajectory_id": "t-1", "tenant": "acme", "outcome": "sent to 203.0.113.7"}
    out, _ = redactor.redact_data(end)
    assert isinstance(out, TrajectoryEndEvent) and "203.0.113.7" not in out.outcome

    reward = {"event_type": "reward", "trajectory_id": "t-1", "tenant": "acme",
              "reward": {"kind": "critique", "critique": "it leaked bob@example.com"}}  # fmt: skip
    out, _ = redactor.redact_data(reward)
    assert isinstance(out, RewardEvent) and "bob@example.com" not in (out.reward.critique or "")


def test_only_present_token_ids_are_cleared(redactor: Redactor) -> None:
    step = {"event_type": "step", "trajectory_id": "t", "tenant": "acme", "step_index": 0,
            "observation": {"messages": [{"role": "user", "content": "I am alice@example.com"}]},
            "action": {"prompt_token_ids": [1, 2], "choices": [
                {"message": {"role": "assistant", "content": "hi alice@example.com"}, "token_ids": [4]},
                {"message": {"role": "assistant", "content": "hello"}, "token_ids": [5]}]}}  # fmt: skip
    out, _ = redactor.redact_data(step)
    assert out.action.prompt_token_ids is None
    assert out.action.choices[0].token_ids is None and out.action.choices[1].token_ids == [5]


def test_invalid_objects_fail_validation_after_the_walk(redactor: Redactor) -> None:
    extra = {"event_type": "step", "trajectory_id": "t", "tenant": "acme", "step_index": 0, "surprise": 1}
    with pytest.raises(ValidationError):
        redactor.redact_data(extra)
    number = {"event_type": "step", "trajectory_id": "t", "tenant": "acme", "step_index": 0,
              "observation": {"messages": [{"role": "user", "content": 5365228761}]}}  # fmt: skip
    with pytest.raises(ValidationError):  # a number is not a text: refused, never passed through unread
        redactor.redact_data(number)


def test_malformed_structure_raises_and_other_types_are_refused(redactor: Redactor) -> None:
    shapeless = {"event_type": "step", "trajectory_id": "t", "tenant": "acme", "step_index": 0,
                 "observation": {"messages": "not a list"}}  # fmt: skip
    with pytest.raises(Exception) as caught:
        redactor.redact_data(shapeless)
    assert not isinstance(caught.value, RedactionError)
    with pytest.raises(RedactionError, match="dead_letter"):
        redactor.redact_data({"event_type": "dead_letter", "trajectory_id": "t", "tenant": "acme"})
