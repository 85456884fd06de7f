"""An audited trajectory version as OpenTelemetry spans, after the GenAI semantic conventions.

    trace   = the trajectory (trace id derived from the trajectory id: every version joins one trace)
    ├─ invoke_agent            root: gen_ai.conversation.id, sluice.* governance (tenant, eligibility and
    │  │                       its reasons, replay grade, data class, consent, retention, redactions)
    │  ├─ chat {model}         one per step: gen_ai.request/response.*, usage, finish reasons, sampling,
    │  │  │                    the redacted new input and output messages, sluice.policy.version
    │  │  └─ execute_tool {n}  one per tool call the model made (arguments, and the result the agent sent)
    │  └─ sluice.version {v}   one per version: reward events (gen_ai.evaluation.result) and feedback
    │                          events (sluice.feedback), linked to the step a reward names

Span ids are derived from stable identities (trajectory id, step event id, version), so exporting the
same version twice (at-least-once delivery) or a later version re-sending its steps yields the same
spans: receivers deduplicate by span id. Only audited (redacted) trajectories come here: the content is
what redaction left, placeholders included.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from sluice.events import Message, Reward, StepEvent, Trajectory

SCOPE = InstrumentationScope("sluice.otel_export", "1")
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def trace_id(trajectory_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"trace:{trajectory_id}".encode()).digest()[:16], "big") or 1


def span_id(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256(":".join(parts).encode()).digest()[:8], "big") or 1


def _ns(at: datetime | None) -> int | None:
    return None if at is None else int(at.timestamp() * 1e9)


def _ctx(tid: int, sid: int) -> SpanContext:
    return SpanContext(tid, sid, is_remote=False, trace_flags=_SAMPLED)


def _messages_json(messages: list[Message]) -> str:
    """The conventions' structured form: role + parts (text, tool_call, tool_call_response)."""
    out = []
    for m in messages:
        parts: list[dict[str, Any]] = []
        if isinstance(m.content, str) and m.content:
            kind = "tool_call_response" if m.role == "tool" else "text"
            parts.append(
                {"type": kind, "id": m.tool_call_id, "response": m.content}
                if kind == "tool_call_response"
                else {"type": "text", "content": m.content}
            )
        elif isinstance(m.content, list):
            parts += [{"type": "text", "content": p.get("text", "")} for p in m.content if p.get("text")]
        for call in m.tool_calls or []:
            parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments})
        out.append({"role": m.role, "parts": parts})
    return json.dumps(out, ensure_ascii=False)


def governance_attributes(traj: Trajectory) -> dict[str, Any]:
    g = traj.governance
    attrs: dict[str, Any] = {
        "sluice.trajectory.id": traj.trajectory_id,
        "sluice.tenant": traj.tenant,
        "sluice.redaction": g.redaction,
        "sluice.data_class": g.data_class,
        "sluice.status": traj.status,
    }
    if g.consent.training is not None:
        attrs["sluice.consent.training"] = g.consent.training
    if g.eligibility is not None:
        attrs["sluice.eligibility.decision"] = g.eligibility.decision
        attrs["sluice.eligibility.policy_version"] = g.eligibility.policy_version
        if g.eligibility.reasons:
            attrs["sluice.eligibility.reasons"] = list(g.eligibility.reasons)
    if g.replay is not None:
        attrs["sluice.replay.grade"] = g.replay.grade
        if g.replay.reasons:
            attrs["sluice.replay.reasons"] = list(g.replay.reasons)
    if g.retention_deadline is not None:
        attrs["sluice.retention_deadline"] = g.retention_deadline.isoformat()
    return attrs


def _redaction_attributes(step: StepEvent) -> dict[str, Any]:
    report = step.governance.redaction_report
    if report is None:
        return {}
    return {f"sluice.redaction.entities.{k}": v for k, v in sorted(report.entities.items())}


def step_attributes(step: StepEvent, conversation_id: str, content: bool) -> dict[str, Any]:
    md = step.metadata
    attrs: dict[str, Any] = {**md.gen_ai.otel_attributes(), "gen_ai.conversation.id": conversation_id}
    s = md.sampling
    for name, value in (
        ("gen_ai.request.temperature", s.temperature),
        ("gen_ai.request.top_p", s.top_p),
        ("gen_ai.request.top_k", s.top_k),
        ("gen_ai.request.max_tokens", s.max_tokens),
        ("gen_ai.request.seed", s.seed),
        ("gen_ai.request.choice.count", s.n),
        ("gen_ai.request.stop_sequences", s.stop),
        ("gen_ai.request.stream", md.stream),
        ("sluice.policy.version", md.model_version),
        ("sluice.task.id", md.task_id),
        ("sluice.harness.fingerprint", md.harness_fingerprint),
        ("sluice.latency_ms", md.latency_ms),
        ("sluice.backend", md.backend or None),
    ):
        if value is not None:
            attrs[name] = value
    if md.policy_versions:
        attrs["sluice.policy.versions"] = list(md.policy_versions)
    if md.time_to_first_token_ms is not None:
        attrs["gen_ai.response.time_to_first_chunk"] = md.time_to_first_token_ms / 1000
    attrs["sluice.step.index"] = step.step_index
    attrs["sluice.step.prefix_message_count"] = step.observation.prefix_message_count
    attrs.update(_redaction_attributes(step))
    if content:
        attrs["gen_ai.input.messages"] = _messages_json(step.observation.messages)
        attrs["gen_ai.output.messages"] = _messages_json([c.message for c in step.action.choices])
    return attrs


def _tool_results(traj: Trajectory) -> dict[str, str]:
    """tool_call_id -> the result the agent sent back (a tool message of a later step), redacted."""
    out: dict[str, str] = {}
    for step in traj.steps:
        for m in step.observation.messages:
            if m.role == "tool" and m.tool_call_id and isinstance(m.content, str):
                out[m.tool_call_id] = m.content
    return out


def _reward_event(r: Reward) -> Event:
    attrs: dict[str, Any] = {
        "gen_ai.evaluation.name": r.name,
        "sluice.reward.kind": r.kind,
        "sluice.reward.source": r.source,
        "sluice.reward.id": r.reward_id,
    }
    if r.value is not None:
        attrs["gen_ai.evaluation.score.value"] = r.value
    if r.critique:
        attrs["gen_ai.evaluation.explanation"] = r.critique
    if r.step_index is not None:
        attrs["sluice.step.index"] = r.step_index
    name = "sluice.feedback" if r.kind == "feedback" else "gen_ai.evaluation.result"
    return Event(name, attrs, timestamp=_ns(r.created_at))


def _span(
    resource: Resource,
    name: str,
    context: SpanContext,
    parent: SpanContext | None,
    attrs: dict[str, Any],
    start: int | None,
    end: int | None,
    **more: Any,
) -> ReadableSpan:
    """A finished span of Sluice's instrumentation scope; ``more``: kind, status, events, links."""
    return ReadableSpan(
        name,
        context,
        parent,
        resource,
        attrs,
        start_time=start,
        end_time=end,
        instrumentation_scope=SCOPE,
        **more,
    )


def trajectory_spans(traj: Trajectory, resource: Resource, content: bool = True) -> list[ReadableSpan]:
    """Every span of one audited trajectory version (see the module docstring for the shape)."""
    tid = trace_id(traj.trajectory_id)
    root_id = span_id(traj.trajectory_id, "root")
    root_ctx = _ctx(tid, root_id)
    conversation = traj.session_id or traj.trajectory_id
    steps = sorted(traj.steps, key=lambda s: s.step_index)
    start = _ns(traj.first_step_at) or (_ns(steps[0].metadata.started_at) if steps else _ns(traj.created_at))
    end = _ns(traj.ended_at) or _ns(traj.emitted_at)
    spans: list[ReadableSpan] = []
    step_ids: dict[int, int] = {}
    results = _tool_results(traj)
    for step in steps:
        sid = span_id(traj.trajectory_id, "step", step.event_id)
        step_ids[step.step_index] = sid
        s_start = _ns(step.metadata.started_at) or start
        s_end = s_start + int((step.metadata.latency_ms or 0) * 1e6)
        failed = step.action_result.error or (step.action_result.status_code or 200) >= 400
        model = step.metadata.gen_ai.request_model or step.metadata.gen_ai.response_model or ""
        op = step.metadata.gen_ai.otel_attributes()["gen_ai.operation.name"]
        spans.append(
            _span(
                resource,
                f"{op} {model}".strip(),
                _ctx(tid, sid),
                root_ctx,
                step_attributes(step, conversation, content),
                s_start,
                s_end,
                kind=SpanKind.CLIENT,
                status=Status(StatusCode.ERROR, step.action_result.error or "") if failed else Status(),
            )
        )
        for choice in step.action.choices:
            for n, call in enumerate(choice.message.tool_calls or []):
                attrs: dict[str, Any] = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.type": "function",
                    "gen_ai.conversation.id": conversation,
                }
                if call.id:
                    attrs["gen_ai.tool.call.id"] = call.id
                if content:
                    attrs["gen_ai.tool.call.arguments"] = call.arguments
                    if call.id in results:
                        attrs["gen_ai.tool.call.result"] = results[call.id]
                spans.append(
                    _span(
                        resource,
                        f"execute_tool {call.name}",
                        _ctx(tid, span_id(traj.trajectory_id, "tool", step.event_id, str(n))),
                        _ctx(tid, sid),
                        attrs,
                        s_end,
                        s_end,
                        kind=SpanKind.INTERNAL,
                    )
                )
    version_attrs: dict[str, Any] = {
        "sluice.trajectory.id": traj.trajectory_id,
        "sluice.trajectory.version": traj.version,
        "sluice.rewarded": traj.rewarded,
        "sluice.step_count": len(steps),
    }
    if traj.reward is not None:
        version_attrs["sluice.reward"] = traj.reward
    links = [
        Link(_ctx(tid, step_ids[r.step_index]), {"sluice.reward.id": r.reward_id})
        for r in traj.rewards
        if r.step_index is not None and r.step_index in step_ids
    ]
    emitted = _ns(traj.emitted_at) or end
    spans.append(
        _span(
            resource,
            f"sluice.version {traj.version}",
            _ctx(tid, span_id(traj.trajectory_id, "version", str(traj.version))),
            root_ctx,
            version_attrs,
            emitted,
            emitted,
            events=[_reward_event(r) for r in traj.rewards],
            links=links,
        )
    )
    root_attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": conversation,
        **governance_attributes(traj),
    }
    spans.append(
        _span(
            resource,
            "invoke_agent",
            root_ctx,
            None,
            root_attrs,
            start,
            max(end or 0, start or 0),
            kind=SpanKind.INTERNAL,
        )
    )
    return spans
