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

Split by what the models hold: ``base`` (versions, ids, base models), ``step`` (one LLM call),
``governance_fields``, ``trajectory`` (end and reward events, versions, step records), ``records`` (dead
letters, policy and erasure events) and ``codec`` (``encode``/``decode``). Import from ``sluice.events``.

    sluice schema            # prints the JSON Schema of every event
"""

from __future__ import annotations

from sluice.events.base import (
    LOCAL_ID_PATTERN,
    REFS_SCHEMA_VERSION,
    SCHEMA_VERSION,
    TENANT_PATTERN,
    TENANT_SEP,
    new_id,
    scoped_trajectory_id,
    trajectory_owner,
    utcnow,
)
from sluice.events.base import (
    _Model as _Model,  # sluice.evolution builds on it
)
from sluice.events.codec import (
    AnyEvent,
    decode,
    encode,
    json_schema,
)
from sluice.events.governance_fields import (
    GRADE_RANK,
    REPLAY_GRADES,
    Consent,
    EligibilityDecision,
    Governance,
    RedactionReport,
    ReplayGrade,
    ReplayGradeName,
    grade_at_least,
)
from sluice.events.records import (
    CONVERSATION_HEADER,
    POLICY_EXTENSION_FIELD,
    POLICY_FALLBACK_HEADER,
    POLICY_VERSION_HEADER,
    TASK_ID_HEADER,
    TASK_ID_METADATA_KEY,
    DeadLetter,
    ErasureEvent,
    ErasureScope,
    PolicyEvent,
    PolicyRole,
)
from sluice.events.step import (
    OTEL_GENAI_NAMES,
    Action,
    ActionResult,
    Choice,
    FeedbackKind,
    FeedbackSignal,
    GenAIAttributes,
    Message,
    Observation,
    Reward,
    SamplingParams,
    StepEvent,
    StepMetadata,
    ToolCall,
    ToolResult,
    message_hash,
    reconstruct_messages,
    step_order,
)
from sluice.events.trajectory import (
    RewardEvent,
    Trajectory,
    TrajectoryEndEvent,
    TrajectoryStep,
    encode_step_record,
    step_bytes_of,
    trajectory_version_id,
)

__all__ = [
    "SCHEMA_VERSION",
    "REFS_SCHEMA_VERSION",
    "utcnow",
    "new_id",
    "TENANT_SEP",
    "LOCAL_ID_PATTERN",
    "TENANT_PATTERN",
    "scoped_trajectory_id",
    "trajectory_owner",
    "ToolCall",
    "Message",
    "message_hash",
    "Observation",
    "Choice",
    "Action",
    "ToolResult",
    "FeedbackKind",
    "FeedbackSignal",
    "ActionResult",
    "Reward",
    "SamplingParams",
    "OTEL_GENAI_NAMES",
    "GenAIAttributes",
    "StepMetadata",
    "RedactionReport",
    "Consent",
    "EligibilityDecision",
    "ReplayGradeName",
    "REPLAY_GRADES",
    "GRADE_RANK",
    "grade_at_least",
    "ReplayGrade",
    "Governance",
    "StepEvent",
    "TrajectoryEndEvent",
    "RewardEvent",
    "trajectory_version_id",
    "step_order",
    "TrajectoryStep",
    "encode_step_record",
    "step_bytes_of",
    "Trajectory",
    "DeadLetter",
    "POLICY_VERSION_HEADER",
    "POLICY_FALLBACK_HEADER",
    "POLICY_EXTENSION_FIELD",
    "TASK_ID_HEADER",
    "CONVERSATION_HEADER",
    "TASK_ID_METADATA_KEY",
    "PolicyRole",
    "PolicyEvent",
    "ErasureScope",
    "ErasureEvent",
    "AnyEvent",
    "encode",
    "decode",
    "json_schema",
    "reconstruct_messages",
]
