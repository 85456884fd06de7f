"""An audited trajectory becomes one trace of GenAI spans with governance as sluice.* attributes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from opentelemetry.sdk.resources import Resource

from pipeline.otel_export.spans import span_id, trace_id, trajectory_spans
from sluice.events import (
    Action,
    Choice,
    EligibilityDecision,
    Governance,
    Message,
    Observation,
    RedactionReport,
    ReplayGrade,
    Reward,
    StepEvent,
    StepMetadata,
    ToolCall,
    Trajectory,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _trajectory(version: int = 1, rewards: list[Reward] | None = None) -> Trajectory:
    call = ToolCall(id="call_1", name="lookup_customer", arguments='{"email": "<EMAIL_ADDRESS_1>"}')
    s0 = StepEvent(
        trajectory_id="tr-1",
        tenant="acme",
        step_index=0,
        observation=Observation(messages=[Message(role="user", content="I am <EMAIL_ADDRESS_1>")]),
        action=Action(
            choices=[Choice(message=Message(role="assistant", tool_calls=[call]), finish_reason="tool_calls")]
        ),
        metadata=StepMetadata(model_version="tiny-1", latency_ms=12.0, started_at=T0),
        governance=Governance(
            redaction="redacted", redaction_report=RedactionReport(entities={"EMAIL_ADDRESS": 2})
        ),
    )
    s0.metadata.gen_ai.request_model = "sluice-tiny"
    s0.metadata.gen_ai.finish_reasons = ["tool_calls"]
    s0.metadata.gen_ai.usage_input_tokens, s0.metadata.gen_ai.usage_output_tokens = 30, 7
    s0.metadata.sampling.temperature = 0.7
    s1 = StepEvent(
        trajectory_id="tr-1",
        tenant="acme",
        step_index=1,
        observation=Observation(
            messages=[Message(role="tool", tool_call_id="call_1", content='{"phone": "<PHONE_NUMBER_1>"}')],
            prefix_message_count=2,
        ),
        action=Action(
            choices=[Choice(message=Message(role="assistant", content="done"), finish_reason="stop")]
        ),
        metadata=StepMetadata(model_version="tiny-2", started_at=T0 + timedelta(seconds=1)),
    )
    s1.metadata.gen_ai.request_model = "sluice-tiny"
    return Trajectory(
        trajectory_id="tr-1",
        tenant="acme",
        session_id="sess-1",
        version=version,
        steps=[s0, s1],
        rewards=rewards or [],
        reward=0.5 if rewards else None,
        rewarded=bool(rewards),
        first_step_at=T0,
        ended_at=T0 + timedelta(seconds=2),
        governance=Governance(
            redaction="redacted",
            eligibility=EligibilityDecision(
                decision="train", reasons=["tenant opted in"], policy_version="p1"
            ),
            replay=ReplayGrade(grade="approximate", reasons=["sampled at temperature 0.7"]),
        ),
    )


def test_one_trace_root_steps_tools_and_version() -> None:
    reward = Reward(name="outcome", value=0.5, step_index=0, critique="ok for <EMAIL_ADDRESS_1>")
    spans = trajectory_spans(_trajectory(2, [reward]), Resource.create({"service.name": "sluice"}))
    by_name = {s.name: s for s in spans}
    assert set(by_name) == {
        "invoke_agent",
        "chat sluice-tiny",
        "execute_tool lookup_customer",
        "sluice.version 2",
    }
    assert {s.context.trace_id for s in spans} == {trace_id("tr-1")}
    root = by_name["invoke_agent"]
    assert root.parent is None and root.attributes["sluice.tenant"] == "acme"
    assert root.attributes["sluice.eligibility.decision"] == "train"
    assert root.attributes["sluice.eligibility.reasons"] == ["tenant opted in"]
    assert root.attributes["sluice.replay.grade"] == "approximate"
    assert root.attributes["gen_ai.conversation.id"] == "sess-1"
    steps = [s for s in spans if s.name.startswith("chat")]
    assert len(steps) == 2 and all(s.parent.span_id == root.context.span_id for s in steps)
    first = next(s for s in steps if s.attributes["sluice.step.index"] == 0)
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert (
        first.attributes["gen_ai.usage.input_tokens"] == 30
        and first.attributes["gen_ai.request.temperature"] == 0.7
    )
    assert first.attributes["sluice.policy.version"] == "tiny-1"
    assert first.attributes["sluice.redaction.entities.EMAIL_ADDRESS"] == 2
    assert "<EMAIL_ADDRESS_1>" in first.attributes["gen_ai.input.messages"]
    tool = by_name["execute_tool lookup_customer"]
    assert tool.parent.span_id == first.context.span_id
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.attributes["gen_ai.tool.call.result"] == '{"phone": "<PHONE_NUMBER_1>"}'
    version = by_name["sluice.version 2"]
    assert version.attributes["sluice.reward"] == 0.5
    [event] = version.events
    assert (
        event.name == "gen_ai.evaluation.result" and event.attributes["gen_ai.evaluation.score.value"] == 0.5
    )
    assert [link.context.span_id for link in version.links] == [first.context.span_id]


def test_ids_are_stable_across_versions_and_content_can_be_left_out() -> None:
    resource = Resource.create({})
    t1 = _trajectory(1)
    t2 = t1.model_copy(update={"version": 2})  # a later version re-lists the same steps

    def ids(t: Trajectory) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for span in trajectory_spans(t, resource):
            out.setdefault(span.name.split(" ")[0], set()).add(span.context.span_id)
        return out

    a, b = ids(t1), ids(t2)
    assert a["invoke_agent"] == b["invoke_agent"] == {span_id("tr-1", "root")}
    assert a["chat"] == b["chat"] and len(a["chat"]) == 2 and a["execute_tool"] == b["execute_tool"]
    assert a["sluice.version"] != b["sluice.version"]
    bare = trajectory_spans(t2, resource, content=False)
    assert not any(
        "gen_ai.input.messages" in s.attributes or "gen_ai.tool.call.arguments" in s.attributes for s in bare
    )
