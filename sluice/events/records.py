"""Records of the system's own doing: a dead letter (what a stage could not process), a policy server's
change of versions (and the headers it speaks by), an erasure every holder of a copy acts on.

    pytest tests/sluice/test_events.py
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Literal

from pydantic import Field

from sluice.events.base import SCHEMA_VERSION, _Model, new_id, utcnow


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
