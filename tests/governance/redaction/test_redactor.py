"""Redactor on events: every text field, a new event, the report, the cache, config errors."""

from __future__ import annotations

import json

import pytest

from governance.config import RedactionConfig
from governance.redaction import PlaceholderState, RedactionConfigError, RedactionError, Redactor
from sluice.events import (
    Action,
    ActionResult,
    Choice,
    DeadLetter,
    FeedbackSignal,
    Message,
    Observation,
    Reward,
    RewardEvent,
    StepEvent,
    ToolCall,
    ToolResult,
    TrajectoryEndEvent,
    decode,
    encode,
)

RAW = ["alice@example.com", "4158675309", "bob@example.com", "AKIAIOSFODNN7EXAMPLE", "203.0.113.7",
       "536-22-8761", "carol@example.com", "dave@example.com", "+44 20 7946 0958", "hunter2!x"]  # fmt: skip


def full_step(step_index: int = 0) -> StepEvent:
    """A step with a value of PII in every text-bearing field."""
    return StepEvent(
        trajectory_id="traj-1",
        tenant="acme",
        step_index=step_index,
        observation=Observation(
            messages=[
                Message(role="user", content=[{"type": "text", "text": "I am alice@example.com"}]),
                Message(role="tool", tool_call_id="c0", content=json.dumps({"mobile": "4158675309"})),
                Message(role="assistant", content="noted", reasoning_content="user is alice@example.com"),
            ],
            tools=[{"type": "function", "function": {"name": "send", "description": "mail ops@example.com"}}],
            prompt_text=None,
        ),
        hidden_state={"scratch": "bob@example.com", "keys": ["AKIAIOSFODNN7EXAMPLE"]},
        action=Action(
            choices=[
                Choice(
                    message=Message(
                        role="assistant",
                        content="ping 203.0.113.7",
                        tool_calls=[ToolCall(id="c1", name="lookup", arguments='{"ssn": "536-22-8761"}')],
                    ),
                    token_ids=[1, 2, 3],
                    logprobs=[-0.1, -0.2, -0.3],
                )
            ],
            prompt_token_ids=[7, 8, 9],
        ),  # fmt: skip
        action_result=ActionResult(
            tool_results=[
                ToolResult(tool_call_id="c1", tool_name="lookup", content='{"owner": "carol@example.com"}')
            ],
            feedback=[FeedbackSignal(kind="edit", detail="changed to dave@example.com")],
            error="upstream said +44 20 7946 0958 is busy",
        ),
        rewards=[Reward(kind="critique", critique="the password hunter2!x leaked")],
    )


def test_every_text_field_is_redacted(redactor: Redactor) -> None:
    step = full_step()
    original = step.model_dump_json()
    new, state = redactor.redact_event(step, None)
    wire = encode(new).decode()
    for value in RAW:
        assert value not in wire, value
    assert step.model_dump_json() == original  # input untouched
    assert isinstance(decode(encode(new)), StepEvent)
    assert new.observation.messages[0].content == [{"type": "text", "text": "I am <EMAIL_ADDRESS_1>"}]
    assert new.observation.messages[2].model_extra["reasoning_content"] == "user is <EMAIL_ADDRESS_1>"
    assert new.action.choices[0].message.tool_calls[0].arguments.startswith('{"ssn": "<US_SSN:')
    assert new.hidden_state == {"scratch": "<EMAIL_ADDRESS_3>", "keys": ["<REDACTED>"]}  # 2: tools
    assert new.action_result.tool_results[0].content == '{"owner": "<EMAIL_ADDRESS_4>"}'
    assert new.rewards[0].critique == "the password <REDACTED> leaked"
    assert new.event_id == step.event_id and state.size >= 6


def test_token_ids_of_redacted_text_are_dropped(redactor: Redactor) -> None:
    new, _ = redactor.redact_event(full_step())
    assert new.action.prompt_token_ids is None
    assert new.action.choices[0].token_ids is None and new.action.choices[0].logprobs == [-0.1, -0.2, -0.3]
    clean = StepEvent(trajectory_id="t", tenant="x", step_index=0,
                      observation=Observation(messages=[Message(role="user", content="hello")]),
                      action=Action(choices=[Choice(message=Message(role="assistant", content="hi"), token_ids=[5])],
                                    prompt_token_ids=[1, 2]))  # fmt: skip
    kept, _ = redactor.redact_event(clean)
    assert kept.action.prompt_token_ids == [1, 2] and kept.action.choices[0].token_ids == [5]


def test_report_counts_without_values(redactor: Redactor) -> None:
    new, _ = redactor.redact_event(full_step())
    report = new.governance.redaction_report
    assert new.governance.redaction == "redacted"
    assert report.entities["EMAIL_ADDRESS"] == 6 and report.entities["AWS_ACCESS_KEY_ID"] == 1
    assert report.entities["PHONE_NUMBER"] == 2 and report.entities["CREDENTIAL"] == 1
    assert report.recognizer_version.startswith("sluice-") and report.config_version.startswith("1-")
    assert report.analysed_texts + report.cached_texts >= 10 and report.residual == 0
    dumped = report.model_dump_json()
    assert not any(v in dumped for v in RAW)


def test_cache_hit_gives_identical_output(redactor_factory) -> None:
    r = redactor_factory(hash_key="cache-test", operators={"SECRET": "drop"}, config_version="cache")
    step = full_step()
    first, s1 = r.redact_event(step, None)
    second, s2 = r.redact_event(step, None)
    assert first.governance.redaction_report.analysed_texts > 0
    assert second.governance.redaction_report.analysed_texts == 0
    assert second.governance.redaction_report.cached_texts == first.governance.redaction_report.analysed_texts
    assert first.model_dump(exclude={"governance"}) == second.model_dump(exclude={"governance"}) and s1 == s2
    # A cache hit under another trajectory's state still numbers placeholders from that state.
    _, prior, _ = r.redact_text("zed@example.com")
    third, _ = r.redact_event(full_step(), prior)
    assert third.observation.messages[0].content == [{"type": "text", "text": "I am <EMAIL_ADDRESS_2>"}]


def test_resent_history_is_not_reanalysed(plain: Redactor) -> None:
    history = [Message(role="user", content=f"turn {i}: write to u{i}@example.com") for i in range(12)]
    state: PlaceholderState | None = None
    analysed = []
    for k in range(1, 13):
        step = StepEvent(trajectory_id="resend", tenant="x", step_index=k - 1,
                         observation=Observation(messages=history[:k]))  # fmt: skip
        new, state = plain.redact_event(step, state)
        analysed.append(new.governance.redaction_report.analysed_texts)
        assert new.observation.messages[k - 1].content.endswith(f"<EMAIL_ADDRESS_{k}>")
    assert analysed == [1] * 12


def test_end_and_reward_events(redactor: Redactor) -> None:
    end, _ = redactor.redact_event(
        TrajectoryEndEvent(trajectory_id="t", tenant="x", outcome="sent to a@example.com")
    )
    assert end.outcome == "sent to <EMAIL_ADDRESS_1>" and end.governance.redaction == "redacted"
    reward = RewardEvent(
        trajectory_id="t", tenant="x", reward=Reward(kind="critique", critique="call 4158675309 now")
    )
    new, _ = redactor.redact_event(reward)
    assert (
        new.reward.critique == "call <PHONE_NUMBER_1> now" and reward.reward.critique == "call 4158675309 now"
    )


def test_unsupported_event_is_a_clear_error(redactor: Redactor) -> None:
    with pytest.raises(RedactionError, match="cannot redact a DeadLetter"):
        redactor.redact_event(DeadLetter(stage="x", reason="y"))


def test_config_errors() -> None:
    with pytest.raises(RedactionConfigError, match="need redaction.ner"):
        Redactor.from_config(RedactionConfig(entities=["PERSON"]))
    with pytest.raises(RedactionConfigError, match="no recognizer for"):
        Redactor.from_config(RedactionConfig(entities=["NOT_A_THING"]))
    with pytest.raises(RedactionConfigError, match="not installed"):
        Redactor.from_config(RedactionConfig(ner=True, ner_model="no_such_spacy_package"))
    with pytest.raises(ValueError, match="residual_threshold"):
        RedactionConfig(residual_threshold=0.7)


def test_entity_selection_and_stock_extras(redactor_factory) -> None:
    only_secrets = redactor_factory(entities=["SECRET"], hash_key="k")
    out, _, counts = only_secrets.redact_text("a@example.com AKIAIOSFODNN7EXAMPLE")
    assert out == "a@example.com <AWS_ACCESS_KEY_ID_1>" and counts == {"AWS_ACCESS_KEY_ID": 1}
    with_url = redactor_factory(entities=["URL", "EMAIL_ADDRESS"], hash_key="k")
    out, _, counts = with_url.redact_text("see https://internal.example.com/x")
    assert counts == {"URL": 1}


def test_redacting_twice_changes_nothing_more(redactor: Redactor) -> None:
    once, state = redactor.redact_event(full_step())
    twice, state2 = redactor.redact_event(once, state)
    assert twice.model_dump(exclude={"governance"}) == once.model_dump(exclude={"governance"})
    assert twice.governance.redaction_report.entities == {} and state2 == state
