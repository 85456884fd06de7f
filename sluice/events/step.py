"""One LLM call as the proxy records it: the messages new since the previous step (linear, not quadratic),
the action, its result, rewards and metadata (OTel GenAI names), and how a step sequence gives back the
full context (``reconstruct_messages``).

    pytest tests/sluice/test_events.py
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from sluice.compact_json import compact_json
from sluice.events.base import _Event, _Model, _Open, new_id, utcnow
from sluice.events.governance_fields import Governance

# ----------------------------------------------------------------------------- messages


class ToolCall(_Open):
    id: str | None = None
    type: str = "function"
    name: str
    arguments: str = ""  # JSON text exactly as the model produced it


class Message(_Open):
    """One chat message in OpenAI shape (Anthropic content blocks are translated by the proxy)."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]  # function: legacy API
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


_HASH_JSON = compact_json(sort_keys=True)


def message_hash(messages: list[Message], seed: str = "") -> str:
    """Chained SHA-256 over messages: ``message_hash(a + b) == message_hash(b, message_hash(a))``. Each
    message is its JSON mode dump without nulls as sorted, compact, ASCII JSON (one encoder built once)."""
    h = seed
    for m in messages:
        body = _HASH_JSON(m.__pydantic_serializer__.to_python(m, mode="json", exclude_none=True))
        h = hashlib.sha256((h + body).encode()).hexdigest()
    return h


# ----------------------------------------------------------------------------- step parts


class Observation(_Model):
    """What the model saw: the messages new since the previous step, and the prefix they extend."""

    messages: list[Message] = Field(default_factory=list, description="Messages new since the previous step.")
    prefix_hash: str = Field(
        "", description="message_hash of the full history this step extends ('' = none)."
    )
    prefix_message_count: int = Field(0, ge=0, description="Number of messages in that prefix.")
    tools: list[dict[str, Any]] | None = Field(
        None, description="Tool definitions, only when they differ from the previous step's."
    )
    tools_fingerprint: str | None = None
    prompt_text: str | None = Field(None, description="Prompt of a text completion (/v1/completions).")


class Choice(_Model):
    index: int = 0
    message: Message
    finish_reason: str | None = None
    token_ids: list[int] | None = Field(
        None, description="Completion token ids when the backend returns them."
    )
    logprobs: list[float] | None = Field(None, description="Sampling-time logprob per completion token.")


class Action(_Model):
    """What the model did: one choice per sample (n > 1 gives several)."""

    choices: list[Choice] = Field(default_factory=list)
    prompt_token_ids: list[int] | None = Field(
        None, description="Prompt token ids after the first prompt_token_prefix_len tokens."
    )
    prompt_token_prefix_len: int = Field(
        0, ge=0, description="Leading prompt tokens equal to the previous step's prompt+completion tokens."
    )


class ToolResult(_Model):
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_version: str | None = None
    content: str | list[dict[str, Any]] | None = None
    exit_code: int | None = None
    is_error: bool = False


FeedbackKind = Literal["accept", "edit", "retry", "delete", "thumbs_up", "thumbs_down"]


class FeedbackSignal(_Model):
    kind: FeedbackKind
    detail: str | None = None
    at: datetime = Field(default_factory=utcnow)


class ActionResult(_Model):
    """What the action caused: tool results and user signals (filled when the trajectory is assembled)."""

    tool_results: list[ToolResult] = Field(default_factory=list)
    feedback: list[FeedbackSignal] = Field(default_factory=list)
    error: str | None = Field(None, description="Upstream error text when the call failed.")
    status_code: int | None = None


class Reward(_Model):
    reward_id: str = Field(default_factory=new_id)
    name: str = "reward"
    kind: Literal["scalar", "binary", "critique", "feedback"] = "scalar"
    value: float | None = None
    critique: str | None = Field(None, description="Natural-language critique (kind='critique').")
    source: str = "api"
    step_index: int | None = Field(None, ge=0, description="Step the reward belongs to; None = trajectory.")
    created_at: datetime = Field(default_factory=utcnow)


class SamplingParams(_Open):
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    n: int | None = None
    stop: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None


OTEL_GENAI_NAMES: dict[str, str] = {
    "operation_name": "gen_ai.operation.name",
    "provider_name": "gen_ai.provider.name",
    "request_model": "gen_ai.request.model",
    "response_model": "gen_ai.response.model",
    "response_id": "gen_ai.response.id",
    "finish_reasons": "gen_ai.response.finish_reasons",
    "usage_input_tokens": "gen_ai.usage.input_tokens",
    "usage_output_tokens": "gen_ai.usage.output_tokens",
    "conversation_id": "gen_ai.conversation.id",
}


class GenAIAttributes(_Model):
    """Request/response metadata named after the OTel GenAI conventions (see ``otel_attributes``)."""

    operation_name: Literal["chat", "text_completion", "responses", "messages"] = "chat"
    provider_name: str = "openai"  # gen_ai.provider.name: the API surface the agent spoke
    request_model: str = ""
    response_model: str | None = None
    response_id: str | None = None
    finish_reasons: list[str] = Field(default_factory=list)
    usage_input_tokens: int | None = None
    usage_output_tokens: int | None = None
    conversation_id: str | None = None

    def otel_attributes(self) -> dict[str, Any]:
        """The span attributes of the current GenAI semantic conventions. The conventions know the
        operations ``chat`` and ``text_completion`` only: the Responses and Messages APIs are chats."""
        out: dict[str, Any] = {}
        for field, value in self.model_dump(exclude_none=True).items():
            if field == "operation_name":
                value = "text_completion" if value == "text_completion" else "chat"
            if value == []:
                continue  # an empty array attribute says nothing
            out[OTEL_GENAI_NAMES[field]] = value
        return out


class StepMetadata(_Model):
    gen_ai: GenAIAttributes = Field(default_factory=GenAIAttributes)
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    backend: str = Field("", description="Upstream backend name from config.")
    backend_fingerprint: str | None = Field(None, description="system_fingerprint or backend build id.")
    model_version: str | None = Field(
        None,
        description="The policy version that served the step when the backend reports one, else the config's.",
    )
    policy_versions: list[str] = Field(
        default_factory=list,
        description="Every policy version the backend reported for this response (two when it straddled a swap).",
    )
    task_id: str | None = Field(
        None,
        description="The agent's task/group id (x-sluice-task-id header or metadata): GRPO groups by it.",
    )
    harness_fingerprint: str | None = Field(None, description="Hash of the system prompt / harness.")
    overlay_id: str | None = Field(
        None, description="The control-plane overlay the proxy applied to this request (None: none)."
    )
    overlay_arm: Literal["control", "candidate"] | None = Field(
        None, description="Which arm of its scope's assignment the trajectory fell in."
    )
    tool_versions: dict[str, str] = Field(default_factory=dict)
    stream: bool = False
    latency_ms: float | None = None
    time_to_first_token_ms: float | None = None
    cost_usd: float | None = None
    started_at: datetime = Field(default_factory=utcnow)
    side_effects: list[str] = Field(default_factory=list, description="Declared non-idempotent tool effects.")
    request_headers: dict[str, str] = Field(
        default_factory=dict, description="Allowlisted headers only; never credentials."
    )


class StepEvent(_Event):
    """One LLM call of an agent: published by the proxy to the raw steps topic."""

    event_type: Literal["step"] = "step"
    session_id: str | None = None
    step_index: int = Field(ge=0)
    observation: Observation = Field(default_factory=Observation)
    hidden_state: dict[str, Any] | str | None = None
    action: Action = Field(default_factory=Action)
    action_result: ActionResult = Field(default_factory=ActionResult)
    rewards: list[Reward] = Field(default_factory=list)
    metadata: StepMetadata = Field(default_factory=StepMetadata)
    governance: Governance = Field(default_factory=Governance)


def step_order(step: StepEvent) -> tuple[Any, ...]:
    """The order of a trajectory's steps: step index, then event time, then event id."""
    return (step.step_index, step.created_at, step.event_id)


def reconstruct_messages(steps: list[StepEvent]) -> list[Message]:
    """Full context of the last step plus its first choice: observation deltas and actions, in order.

    A step whose ``prefix_message_count`` is 0 after earlier steps starts over (the agent rewrote history).
    """
    history: list[Message] = []
    for step in sorted(steps, key=lambda s: s.step_index):
        if step.observation.prefix_message_count == 0:
            history = []
        else:
            history = history[: step.observation.prefix_message_count]
        history.extend(step.observation.messages)
        if step.action.choices:
            history.append(step.action.choices[0].message)
    return history
