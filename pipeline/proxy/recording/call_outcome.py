"""What one backend call ended with, as the call returns it to its caller (pure data, no I/O).

``BackendCall`` fills a ``CallOutcome`` exactly once, whatever the ending (an answer, an upstream error,
an unreachable backend, a broken stream, a client that went away); the recorder turns it, with the open
step, into the ``StepEvent``. Choices are read from the answer before anything recording asked for is
stripped from it, so token ids and logprobs reach the event even when the agent did not ask for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sluice.events import Message


@dataclass(slots=True)
class RawChoice:
    index: int
    message: dict[str, Any] | Message  # an OpenAI chat message, or already the event Message
    finish_reason: str | None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None


@dataclass(slots=True)
class CallOutcome:
    status: int | None
    error: str | None
    latency_ms: float
    ttft_ms: float | None = None
    response_id: str | None = None
    response_model: str | None = None
    system_fingerprint: str | None = None
    usage: dict[str, Any] | None = None
    choices: list[RawChoice] = field(default_factory=list)  # sorted by index
    prompt_token_ids: list[int] | None = None
    policy_versions: list[str] = field(default_factory=list)  # from the extension field, in order of use
    policy_header: str | None = None  # the version header (used when there is no extension field)

    def served_versions(self) -> list[str]:
        return self.policy_versions or ([self.policy_header[:128]] if self.policy_header else [])
