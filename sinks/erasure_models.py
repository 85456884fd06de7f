"""Erasure request, its outcome, and the event published on the erasure topic.

``ErasureEvent`` is what the stages read from ``topics.name('erasure')`` to drop join state: one event
per erased trajectory, keyed by its id (so it lands on the partition that holds that trajectory's
state), and for tenant/subject erasures one more per partition with ``trajectory_id=None`` carrying the
criterion, for state the store never saw.

    sluice erase --subject user-42
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sluice.events import SCHEMA_VERSION, new_id, utcnow

ErasureScope = Literal["trajectory", "tenant", "subject"]


class ErasureRequest(BaseModel):
    """What to erase: every row of one trajectory, a tenant, or a data subject."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: ErasureScope
    target: str = Field(min_length=1, description="Trajectory id, tenant name or subject id.")
    requested_by: str = Field("unknown", description="Who asked (a person or ticket), for the audit trail.")
    reason: str | None = None

    @field_validator("target")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("target must not be blank")
        return v


class ErasureResult(BaseModel):
    """The audit entry of one erasure (a row of the ``erasures`` table)."""

    erasure_id: str
    scope: ErasureScope
    target: str
    tenant_scope: str | None = None
    requested_by: str
    status: Literal["erased_in_store", "completed", "publish_failed"]
    trajectories: int
    rows_deleted: dict[str, int]
    tombstones: int = 0
    requested_at: datetime
    completed_at: datetime | None = None
    error: str | None = None


class ErasureEvent(BaseModel):
    """Published on the erasure topic after the store has deleted the rows."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SCHEMA_VERSION
    event_type: Literal["erasure"] = "erasure"
    event_id: str = Field(default_factory=new_id)
    erasure_id: str
    scope: ErasureScope
    target: str
    trajectory_id: str | None = Field(None, description="None: applies to all state matching the criterion.")
    tenant_scope: str | None = Field(None, description="Set when a tenant erased its own data.")
    requested_at: datetime = Field(default_factory=utcnow)
