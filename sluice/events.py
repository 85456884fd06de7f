"""The step-level trajectory protocol: every record on every Sluice topic is one of these models.

JSON on the wire (``encode``/``decode``), versioned by ``schema_version``. Field names follow the
OpenTelemetry GenAI semantic conventions where one exists (``gen_ai.request.model`` becomes
``GenAIAttributes.request_model``; ``otel_attributes()`` gives the dotted names back).

Linear, not quadratic: agents re-send the whole history on every call, so a step's ``Observation``
carries only the messages that are new since the previous step of its trajectory plus the hash of the
prefix they extend. ``reconstruct_messages`` rebuilds the full context from the steps.

The same on the output topics: a trajectory version (``schema_version`` ``2.0``) is a header that references
its steps (``StepsRef``), each step travelling once per topic as a ``TrajectoryStep`` record before the
first header that needs it (``sluice.trajectory_refs`` reads them back); a version of the ``1.0`` layout
carries its steps inline and is still read.

    sluice schema            # prints the JSON Schema of every event
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from sluice.compact_json import compact_json
from sluice.step_refs import StepsRef, step_digest

SCHEMA_VERSION = "1.0"
REFS_SCHEMA_VERSION = "2.0"
"""Layout of a ``Trajectory`` that references its steps (``steps_ref``) instead of carrying them; its steps
travel once per topic as ``TrajectoryStep`` records. Readers take both layouts."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """A random, URL-safe event identity (uuid4 hex), from one ``urandom`` read: building a ``uuid.UUID``
    costs three times as much, once or twice per proxied call."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    return b.hex()


# ----------------------------------------------------------------------------- trajectory ids

TENANT_SEP = "~"
"""Separates the owning tenant from the agent's own name in a trajectory id: ``acme~run-7``."""
LOCAL_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"
TENANT_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}"


def scoped_trajectory_id(tenant: str, local_id: str) -> str:
    """The trajectory id as stored and keyed everywhere: the tenant owns its own id space, so two
    tenants using the same name never collide and one can never squat another's trajectory."""
    return f"{tenant}{TENANT_SEP}{local_id}"


def trajectory_owner(trajectory_id: str) -> str | None:
    """The tenant a scoped trajectory id names (None for an unscoped id)."""
    tenant, sep, _ = trajectory_id.partition(TENANT_SEP)
    return tenant if sep else None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Open(BaseModel):
    """Protocol shapes that pass unknown fields through (what agents send varies by SDK)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


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


# ----------------------------------------------------------------------------- governance


class RedactionReport(_Model):
    entities: dict[str, int] = Field(default_factory=dict, description="Entity type -> count; never values.")
    recognizer_version: str = ""
    config_version: str = ""
    cached_texts: int = 0
    analysed_texts: int = 0
    residual: int = Field(
        0, ge=0, description="Findings left in place (operator 'keep' or below the score threshold)."
    )
    failure: str | None = Field(
        None,
        description="Why redaction failed ('timeout', 'error:<type>'): the event's text was withheld, "
        "and its trajectory is never train-eligible.",
    )


class Consent(_Model):
    training: bool | None = None
    flags: dict[str, bool] = Field(default_factory=dict)


class EligibilityDecision(_Model):
    decision: Literal["train", "audit_only", "drop"]
    reasons: list[str] = Field(default_factory=list)
    policy_version: str = ""
    retention_deadline: datetime | None = None


ReplayGradeName = Literal["deterministic", "approximate", "non_replayable"]
REPLAY_GRADES: tuple[ReplayGradeName, ...] = get_args(ReplayGradeName)
"""Replay grades from best to worst (the order of ``ReplayGradeName``)."""
GRADE_RANK: dict[ReplayGradeName, int] = {g: len(REPLAY_GRADES) - 1 - i for i, g in enumerate(REPLAY_GRADES)}
"""A grade's rank: higher is more replayable."""


def grade_at_least(grade: ReplayGradeName, minimum: ReplayGradeName) -> bool:
    """Whether ``grade`` is as replayable as ``minimum`` or more."""
    return GRADE_RANK[grade] >= GRADE_RANK[minimum]


class ReplayGrade(_Model):
    grade: ReplayGradeName
    reasons: list[str] = Field(default_factory=list)


class Governance(_Model):
    redaction: Literal["raw", "redacted"] = "raw"
    redaction_report: RedactionReport | None = None
    data_class: str = "internal"
    consent: Consent = Field(default_factory=Consent)
    retention_deadline: datetime | None = None
    eligibility: EligibilityDecision | None = None
    replay: ReplayGrade | None = None
    subject_ids: list[str] = Field(default_factory=list, description="Data-subject ids for erasure requests.")


# ----------------------------------------------------------------------------- events


class _Event(_Model):
    schema_version: str = SCHEMA_VERSION
    event_id: str = Field(default_factory=new_id, description="Stable identity: duplicates share it.")
    trajectory_id: str
    tenant: str
    created_at: datetime = Field(default_factory=utcnow)


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


class TrajectoryEndEvent(_Event):
    """The agent (or harness) declares the trajectory finished: published on the steps topic."""

    event_type: Literal["end"] = "end"
    step_count: int | None = None
    outcome: str | None = None
    governance: Governance = Field(default_factory=Governance)


class RewardEvent(_Event):
    """A reward or feedback signal, possibly days after the trajectory: the rewards topic."""

    event_type: Literal["reward"] = "reward"
    reward: Reward


def trajectory_version_id(trajectory_id: str, version: int) -> str:
    """Identity of one trajectory version: the ``event_id`` of that version's ``Trajectory``."""
    return f"{trajectory_id}:v{version}"


def step_order(step: StepEvent) -> tuple[Any, ...]:
    """The order of a trajectory's steps: step index, then event time, then event id."""
    return (step.step_index, step.created_at, step.event_id)


class TrajectoryStep(_Event):
    """One assembled step of a trajectory (layout 2.0), sent once per topic before the first header that
    references it (again only when its assembled content changed: a late step reward, a tool answer).
    ``event_id`` is the step's event id; ``version`` the trajectory version it was sent with."""

    schema_version: str = REFS_SCHEMA_VERSION
    event_type: Literal["trajectory_step"] = "trajectory_step"
    version: int = Field(ge=1)
    digest: str
    step: StepEvent


def encode_step_record(
    trajectory_id: str, tenant: str, version: int, step_event_id: str, body: bytes
) -> bytes:
    """A ``TrajectoryStep`` record around a step's bytes, which are spliced in as they are (never encoded
    again): the record's own fields first, ``step`` last (``step_bytes_of`` cuts it back out)."""
    head = {
        "schema_version": REFS_SCHEMA_VERSION,
        "event_id": step_event_id,
        "trajectory_id": trajectory_id,
        "tenant": tenant,
        "created_at": utcnow().isoformat().replace("+00:00", "Z"),
        "event_type": "trajectory_step",
        "version": version,
        "digest": step_digest(body),
    }
    return json.dumps(head, separators=(",", ":")).encode()[:-1] + b',"step":' + body + b"}"


def step_bytes_of(value: bytes) -> bytes | None:
    """The step's bytes of a record ``encode_step_record`` wrote (None: not such a record)."""
    at = value.find(b',"step":')
    return value[at + 8 : -1] if at >= 0 and value.endswith(b"}") else None


class Trajectory(_Event):
    """An assembled, governed trajectory. ``version`` grows when late rewards arrive; never edited in place.

    ``event_id`` is ``trajectory_version_id(trajectory_id, version)``, so re-emitting the same version is
    idempotent.
    """

    event_type: Literal["trajectory"] = "trajectory"
    version: int = Field(1, ge=1)
    session_id: str | None = None
    steps: list[StepEvent] = Field(default_factory=list)
    rewards: list[Reward] = Field(default_factory=list)
    reward: float | None = Field(None, description="Trajectory-level reward after the configured combine.")
    status: Literal["ended", "timed_out"] = "ended"
    rewarded: bool = False
    first_step_at: datetime | None = None
    ended_at: datetime | None = None
    emitted_at: datetime = Field(default_factory=utcnow)
    governance: Governance = Field(default_factory=Governance)
    train_blockers: list[str] | None = Field(
        None,
        description="Why this version may not be trained on, as the join stage decided ([]: it may, and "
        "went to the train topic); None: undecided (a record from before the stage carried its decision).",
    )
    steps_ref: StepsRef | None = Field(
        None,
        description="Layout 2.0: the steps by reference (they travel as TrajectoryStep records before this "
        "header, on its topic and partition); None: layout 1.0, the steps are inline in ``steps``.",
    )

    @property
    def by_reference(self) -> bool:
        return self.steps_ref is not None


class DeadLetter(_Model):
    """A record a stage could not process, with the reason and the original bytes (base64)."""

    schema_version: str = SCHEMA_VERSION
    event_type: Literal["dead_letter"] = "dead_letter"
    event_id: str = Field(default_factory=new_id)
    stage: str
    reason: str
    error_type: str = ""
    source_topic: str = ""
    source_partition: int | None = None
    source_offset: int | None = None
    key: str | None = None
    original_b64: str = ""
    created_at: datetime = Field(default_factory=utcnow)

    @classmethod
    def of(
        cls,
        stage: str,
        reason: str,
        error_type: str = "",
        *,
        source_topic: str = "",
        source_partition: int | None = None,
        source_offset: int | None = None,
        key: bytes | str | None = None,
        original: bytes | None = None,
    ) -> DeadLetter:
        """The dead letter of a record ``stage`` could not process: a byte ``key`` is decoded as UTF-8
        (undecodable bytes as backslash escapes), the ``original`` bytes are kept base64-encoded."""
        if isinstance(key, bytes):
            key = key.decode("utf-8", "backslashreplace")
        return cls(
            stage=stage,
            reason=reason,
            error_type=error_type,
            source_topic=source_topic,
            source_partition=source_partition,
            source_offset=source_offset,
            key=key,
            original_b64=base64.b64encode(original or b"").decode("ascii"),
        )


# How a policy server names the version that produced a response (the proxy records it on the step).
POLICY_VERSION_HEADER = "x-sluice-policy-version"
# A request may carry the same header to pick a version; a policy server that does not keep the version asked
# for answers with its default and names the asked one in this header (and ``policy_fallback`` in the field).
POLICY_FALLBACK_HEADER = "x-sluice-policy-fallback"
POLICY_EXTENSION_FIELD = "sluice"  # {"policy_version": v, "policy_versions": [v, ...]} at the top level
TASK_ID_HEADER = "x-sluice-task-id"
# The proxy names a call's trajectory to a backend it asks for token ids (a policy server), so the server can
# keep each conversation's token ids apart (two with the same text may have been sampled as different tokens).
CONVERSATION_HEADER = "x-sluice-conversation"
TASK_ID_METADATA_KEY = "sluice_task_id"


PolicyRole = Literal["default", "candidate", "kept"]


class PolicyEvent(_Model):
    """A change to the versions a policy server holds: the weights it loaded at start, a weight update (served
    at once, or loaded as a candidate), a promotion or rollback to a kept version, a discard. Published to the
    policy-events topic and appended to the server's JSONL log. Records written before roles existed read
    with ``role``/``parent``/``default_version`` None."""

    schema_version: str = SCHEMA_VERSION
    event_type: Literal["policy"] = "policy"
    event_id: str = Field(default_factory=new_id)
    action: Literal["load", "update", "rollback", "promote", "discard"]
    version: str
    previous_version: str | None = Field(None, description="The default version before the change.")
    role: PolicyRole | None = Field(None, description="The version's role after the change (discard: None).")
    parent: str | None = Field(None, description="The version an update's tensors were laid over.")
    default_version: str | None = Field(None, description="The default version after the change.")
    added_bytes: int = Field(0, ge=0, description="Memory the version holds that its parent does not.")
    candidates: list[str] = Field(default_factory=list, description="Candidate versions after the change.")
    model: str
    server: str = Field(description="Root URL of the policy server.")
    tensors: int = Field(0, ge=0, description="Tensors an update replaced (0: load, rollback).")
    swap_ms: float = Field(0.0, ge=0, description="How long generation paused for the swap.")
    load_ms: float = Field(0.0, ge=0, description="Reading and checking the tensors, while serving went on.")
    kept_versions: list[str] = Field(default_factory=list, description="Versions in memory after the change.")
    created_at: datetime = Field(default_factory=utcnow)


ErasureScope = Literal["trajectory", "tenant", "subject"]


class ErasureEvent(_Model):
    """Published on the erasure topic after the store deleted the rows: every holder of a copy (stages,
    proxies, trainers) purges what it keeps and refuses the trajectory from then on.

    One event per erased trajectory, keyed by its id (it lands on the partition holding that
    trajectory's state); for tenant and subject erasures one more per partition with
    ``trajectory_id=None`` carrying the criterion, for state the store never saw.
    """

    schema_version: str = SCHEMA_VERSION
    event_type: Literal["erasure"] = "erasure"
    event_id: str = Field(default_factory=new_id)
    erasure_id: str
    scope: ErasureScope
    target: str
    trajectory_id: str | None = Field(None, description="None: applies to all state matching the criterion.")
    tenant_scope: str | None = Field(None, description="Set when a tenant erased its own data.")
    requested_at: datetime = Field(default_factory=utcnow)

    def matches(self, trajectory_id: str, tenant: str, subject_ids: list[str] | tuple[str, ...]) -> bool:
        """Whether this erasure covers a trajectory with these owner and subjects."""
        if self.tenant_scope is not None and tenant != self.tenant_scope:
            return False
        if self.trajectory_id is not None or self.scope == "trajectory":
            return trajectory_id == (self.trajectory_id or self.target)
        if self.scope == "tenant":
            return tenant == self.target
        return self.target in subject_ids


AnyEvent = Annotated[
    StepEvent | TrajectoryEndEvent | RewardEvent | Trajectory | TrajectoryStep | DeadLetter | ErasureEvent,
    Field(discriminator="event_type"),
]
_ANY = TypeAdapter(AnyEvent)


def encode(event: BaseModel) -> bytes:
    """Wire form: compact JSON without nulls (``model_dump_json(exclude_none=True)`` as UTF-8 bytes, taken
    straight from pydantic-core's serialiser without the decode to ``str`` and encode back)."""
    return event.__pydantic_serializer__.to_json(event, exclude_none=True)


def decode(
    data: bytes | str,
) -> StepEvent | TrajectoryEndEvent | RewardEvent | Trajectory | TrajectoryStep | DeadLetter | ErasureEvent:
    """Parse any event by its ``event_type``; raises ``pydantic.ValidationError`` on bad input."""
    return _ANY.validate_json(data)


def json_schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Sluice events v{SCHEMA_VERSION}",
        **_ANY.json_schema(),
    }


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
