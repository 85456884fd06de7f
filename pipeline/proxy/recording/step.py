"""Recording: the ``Step`` one model call records (pure).

A step is the one owner of what gets recorded about a call. ``StepRecorder.begin`` opens it with where
the call sits and what the agent asked (cheap references); the backend call ends it exactly once
(``end``) with what the backend answered, whatever the ending (an answer, an upstream error, an
unreachable backend, a broken stream, a client that went away); ``StepRecorder.finish`` links it and
hands it on, and ``step_event`` turns it into the event off the agent's critical path (see
``recorder``). Choices are read from the answer before anything the recording asked for is stripped
from it, so token ids and logprobs reach the event even when the agent did not ask for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pipeline.proxy.config import BackendConfig
from pipeline.proxy.linking.history_linker import StepPlan
from pipeline.proxy.openai_chat.protocol import ChatCompletionRequest
from pipeline.proxy.openai_completions.protocol import CompletionRequest
from pipeline.proxy.surfaces.context import CallContext
from sluice.events import POLICY_VERSION_HEADER, Message

UpstreamRequest = ChatCompletionRequest | CompletionRequest  # what a model call asks its backend


@dataclass(slots=True)
class RawChoice:
    index: int
    message: dict[str, Any] | Message  # an OpenAI chat message, or already the event Message
    finish_reason: str | None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None


@dataclass(slots=True)
class Step:
    """One call's step: where it sits and what was asked (``begin``), then what the backend answered
    (``end``) and its token prefix (``StepRecorder.finish``)."""

    ctx: CallContext
    plan: StepPlan
    backend: BackendConfig
    operation: str  # chat | text_completion | responses | messages
    provider: str  # the API surface the agent spoke: openai | anthropic
    request: UpstreamRequest  # the (translated) request as the agent asked it, for model and sampling
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
    # what the backend answered: the policy versions as they are named, the rest once, by ``end``
    policy_versions: list[str] = field(default_factory=list)  # from the extension field, in order of use
    policy_header: str | None = None  # the version header (used when there is no extension field)
    ended: bool = False
    status: int | None = None
    error: str | None = None
    latency_ms: float = 0.0
    ttft_ms: float | None = None
    response_id: str | None = None
    response_model: str | None = None
    system_fingerprint: str | None = None
    usage: dict[str, Any] | None = None
    choices: list[RawChoice] = field(default_factory=list)  # sorted by index
    prompt_token_ids: list[int] | None = None
    prompt_prefix_len: int = 0  # set by ``StepRecorder.finish``

    @property
    def trajectory_id(self) -> str:
        return self.plan.trajectory_id

    @property
    def step_index(self) -> int:
        return self.plan.step_index

    def end(
        self,
        status: int | None,
        error: str | None,
        latency_ms: float,
        answer: dict[str, Any] | None = None,
        choices: list[RawChoice] | None = None,
        prompt_token_ids: list[int] | None = None,
    ) -> bool:
        """Record how the call ended (the answer's head and usage, its choices); False if it already had."""
        if self.ended:
            return False
        self.ended = True
        self.status, self.error, self.latency_ms = status, error, latency_ms
        if answer is not None:
            self.response_id, self.response_model = answer.get("id"), answer.get("model")
            self.system_fingerprint = answer.get("system_fingerprint")
            usage = answer.get("usage")
            self.usage = usage if isinstance(usage, dict) else None
        self.choices = choices or []
        self.prompt_token_ids = prompt_token_ids
        return True

    def served_versions(self) -> list[str]:
        return self.policy_versions or ([self.policy_header[:128]] if self.policy_header else [])

    def headers(self) -> dict[str, str]:
        """Response headers that tell the agent where its call landed (for the rewards/feedback API) and,
        once the answer or the stream's headers are in, which model policy version answered."""
        out = {
            "x-sluice-trajectory-id": self.plan.trajectory_id,
            "x-sluice-step-index": str(self.plan.step_index),
        }
        versions = self.served_versions()
        if versions:
            out[POLICY_VERSION_HEADER] = ",".join(versions)
        return out


def chat_logprobs(lp: Any) -> list[float] | None:
    """Per-token logprobs of a chat choice (``{"content": [{"logprob": ...}, ...]}``)."""
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):
        return _recordable([e.get("logprob", 0.0) for e in lp["content"] if isinstance(e, dict)])
    return None


def completion_logprobs(lp: Any) -> list[float] | None:
    """Per-token logprobs of a completions choice (``{"token_logprobs": [...]}``; null entries -> 0.0)."""
    values = token_logprobs(lp)
    return None if values is None else _recordable(values)


def token_logprobs(lp: Any) -> list[Any] | None:
    """A completions choice's ``token_logprobs`` as the backend sent them, null entries as 0.0 (a stream's
    chunks are joined first, then read by ``completion_logprobs``, so one bad value cannot shift the
    others)."""
    if isinstance(lp, dict) and isinstance(lp.get("token_logprobs"), list):
        return [v if v is not None else 0.0 for v in lp["token_logprobs"]]
    return None


def _recordable(values: list[Any]) -> list[float] | None:
    """``values`` as floats, or None (the step records no logprobs) when one is not a finite number: a
    backend may send ``-Infinity`` or ``NaN`` (Python's JSON reader takes them), which the event's JSON
    cannot hold, and a list with a hole would shift every later token's logprob."""
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    return out if all(map(math.isfinite, out)) else None
