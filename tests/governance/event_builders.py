"""Small builders of realistic events for the governance and stage tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sluice.events import (
    Action,
    Choice,
    Consent,
    GenAIAttributes,
    Governance,
    Message,
    Observation,
    RedactionReport,
    Reward,
    RewardEvent,
    SamplingParams,
    StepEvent,
    StepMetadata,
    ToolCall,
    TrajectoryEndEvent,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def governance(
    *,
    consent: bool | None = True,
    data_class: str = "internal",
    redacted: bool = True,
    residual: int = 0,
    flags: dict[str, bool] | None = None,
) -> Governance:
    return Governance(
        redaction="redacted" if redacted else "raw",
        redaction_report=RedactionReport(residual=residual) if redacted else None,
        data_class=data_class,
        consent=Consent(training=consent, flags=flags or {}),
    )


def metadata(**overrides: Any) -> StepMetadata:
    fields: dict[str, Any] = {
        "gen_ai": GenAIAttributes(request_model="sluice-tiny-1", response_model="sluice-tiny-1"),
        "sampling": SamplingParams(temperature=0.0),
        "model_version": "tiny-1",
        "backend_fingerprint": "fp-1",
        "harness_fingerprint": "harness-1",
    }
    fields.update(overrides)
    return StepMetadata(**fields)


def step(
    tid: str = "traj-1",
    index: int = 0,
    *,
    tenant: str = "acme",
    text: str = "hello",
    tool_calls: list[ToolCall] | None = None,
    tool_answers: list[tuple[str, str]] | None = None,
    gov: Governance | None = None,
    meta: StepMetadata | None = None,
    prefix: int | None = None,
    **fields: Any,
) -> StepEvent:
    """Step ``index`` of a simple chat: a user message (plus tool answers) and an assistant reply."""
    messages = [Message(role="tool", tool_call_id=cid, content=body) for cid, body in tool_answers or []]
    messages.append(Message(role="user", content=text))
    reply = Message(role="assistant", content=f"reply {index}", tool_calls=tool_calls)
    return StepEvent(
        trajectory_id=tid,
        tenant=tenant,
        step_index=index,
        created_at=fields.pop("created_at", T0 + timedelta(seconds=index)),
        observation=Observation(
            messages=messages, prefix_message_count=(2 * index if prefix is None else prefix)
        ),
        action=fields.pop("action", Action(choices=[Choice(message=reply, finish_reason="stop")])),
        metadata=meta or metadata(),
        governance=gov or governance(),
        **fields,
    )


def end(tid: str = "traj-1", *, tenant: str = "acme", **fields: Any) -> TrajectoryEndEvent:
    return TrajectoryEndEvent(trajectory_id=tid, tenant=tenant, **fields)


def reward_event(
    tid: str = "traj-1",
    name: str = "score",
    value: float | None = 1.0,
    *,
    tenant: str = "acme",
    **reward_fields: Any,
) -> RewardEvent:
    return RewardEvent(
        trajectory_id=tid, tenant=tenant, reward=Reward(name=name, value=value, **reward_fields)
    )
