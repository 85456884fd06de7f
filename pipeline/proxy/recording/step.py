"""The one shape of a step on the request path, and how it becomes a ``StepEvent`` (pure: no I/O, no clock).

``OpenStep`` is what ``StepRecorder.begin`` returns, filled with cheap references; at ``finish`` it gets
the call's ``CallOutcome`` and ``build_step_event`` does the pydantic work, off the agent's critical path
(see ``recorder.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.linking.canonical import event_message
from pipeline.proxy.linking.history_linker import StepPlan
from pipeline.proxy.recording.call_outcome import CallOutcome, RawChoice
from pipeline.proxy.surfaces.context import CallContext
from sluice.events import (
    Action,
    ActionResult,
    Choice,
    Consent,
    GenAIAttributes,
    Governance,
    Message,
    Observation,
    SamplingParams,
    StepEvent,
    StepMetadata,
)

_SAMPLING = ("temperature", "top_p", "top_k", "n", "presence_penalty", "frequency_penalty", "seed")
_SAMPLING_EXTRA = (
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "min_p",
    "repetition_penalty",
    "reasoning_effort",
    "logit_bias",
    "top_logprobs",
)


@dataclass(slots=True)
class OpenStep:
    """A step from ``StepRecorder.begin`` to ``finish``: where it sits and what the agent sent, then its
    outcome and token prefix once the call ended."""

    ctx: CallContext
    plan: StepPlan
    backend: BackendConfig
    operation: str  # chat | text_completion | responses | messages
    provider: str  # the API surface the agent spoke: openai | anthropic
    request: dict[str, Any]  # the (translated) upstream request, for model and sampling
    stream: bool = False
    chain: list[bytes] | None = (
        None  # link hashes of the messages (``canonical.link_chain``); None: no history
    )
    delta: list[Message] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None  # only when they changed
    tools_fp: str | None = None
    harness_fp: str | None = None
    prompt_text: str | None = None
    task_id: str | None = None
    overlay_id: str | None = None  # the control-plane overlay applied to what the backend received
    overlay_arm: str | None = None  # control | candidate, when an assignment covered the request
    # set by ``StepRecorder.finish``
    outcome: CallOutcome | None = None
    prompt_prefix_len: int = 0

    @property
    def trajectory_id(self) -> str:
        return self.plan.trajectory_id

    @property
    def step_index(self) -> int:
        return self.plan.step_index


def chat_logprobs(lp: Any) -> list[float] | None:
    """Per-token logprobs of a chat choice (``{"content": [{"logprob": ...}, ...]}``)."""
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):
        return [float(e.get("logprob", 0.0)) for e in lp["content"] if isinstance(e, dict)]
    return None


def completion_logprobs(lp: Any) -> list[float] | None:
    """Per-token logprobs of a completions choice (``{"token_logprobs": [...]}``; null entries -> 0.0)."""
    if isinstance(lp, dict) and isinstance(lp.get("token_logprobs"), list):
        return [float(v) if v is not None else 0.0 for v in lp["token_logprobs"]]
    return None


def sampling_params(req: dict[str, Any]) -> SamplingParams:
    data: dict[str, Any] = {k: req[k] for k in _SAMPLING if req.get(k) is not None}
    max_tokens = req.get("max_completion_tokens") or req.get("max_tokens")
    if max_tokens is not None:
        data["max_tokens"] = max_tokens
    stop = req.get("stop")
    if stop:
        data["stop"] = [stop] if isinstance(stop, str) else list(stop)
    for k in _SAMPLING_EXTRA:
        if req.get(k) is not None:
            data[k] = req[k]
    return SamplingParams.model_validate(data)


def _choice(raw: RawChoice) -> Choice:
    msg = raw.message
    if not isinstance(msg, Message):
        msg = event_message({"role": "assistant", **(msg or {})}, f"choices[{raw.index}].message")
    return Choice(
        index=raw.index,
        message=msg,
        finish_reason=raw.finish_reason,
        token_ids=raw.token_ids,
        logprobs=raw.logprobs,
    )


def build_step_event(rec: OpenStep) -> StepEvent:
    """The event of a finished step (``rec.outcome`` set)."""
    ctx, plan, out = rec.ctx, rec.plan, rec.outcome
    if out is None:
        raise ValueError("the step has not finished")
    choices = [_choice(c) for c in out.choices]
    usage = out.usage or {}
    prompt_ids = out.prompt_token_ids
    action = Action(
        choices=choices,
        prompt_token_ids=prompt_ids[rec.prompt_prefix_len :] if prompt_ids is not None else None,
        prompt_token_prefix_len=rec.prompt_prefix_len if prompt_ids is not None else 0,
    )
    gen_ai = GenAIAttributes(
        operation_name=rec.operation,  # type: ignore[arg-type]
        provider_name=rec.provider,
        request_model=str(rec.request.get("model", "")),
        response_model=out.response_model,
        response_id=out.response_id,
        finish_reasons=[c.finish_reason for c in choices if c.finish_reason],
        usage_input_tokens=usage.get("prompt_tokens", usage.get("input_tokens")),
        usage_output_tokens=usage.get("completion_tokens", usage.get("output_tokens")),
        conversation_id=ctx.session_id,
    )
    caller = ctx.caller
    versions = out.served_versions()
    return StepEvent(
        trajectory_id=plan.trajectory_id,
        tenant=plan.tenant,
        session_id=ctx.session_id,
        step_index=plan.step_index,
        observation=Observation(
            messages=rec.delta,
            prefix_hash=plan.prefix_hash,
            prefix_message_count=plan.prefix_count,
            tools=rec.tools,
            tools_fingerprint=rec.tools_fp,
            prompt_text=rec.prompt_text,
        ),
        action=action,
        action_result=ActionResult(error=out.error, status_code=out.status),
        metadata=StepMetadata(
            gen_ai=gen_ai,
            sampling=sampling_params(rec.request),
            backend=rec.backend.name,
            backend_fingerprint=out.system_fingerprint,
            model_version=versions[-1] if versions else rec.backend.model_version,
            policy_versions=versions,
            task_id=rec.task_id,
            overlay_id=rec.overlay_id,
            overlay_arm=rec.overlay_arm,  # type: ignore[arg-type]
            harness_fingerprint=rec.harness_fp,
            stream=rec.stream,
            latency_ms=out.latency_ms,
            time_to_first_token_ms=out.ttft_ms,
            started_at=ctx.started_at,
            request_headers=ctx.headers,
        ),
        governance=Governance(
            redaction="raw",
            data_class=caller.data_class,
            consent=Consent(training=caller.consent_training),
            subject_ids=list(caller.subject_ids),
        ),
    )
