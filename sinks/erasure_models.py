"""Erasure request and its outcome (the audit entry and the receipt). The event published on the
erasure topic is ``sluice.events.ErasureEvent``, part of the one event model.

    sluice erase --subject user-42
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from sluice.events import ErasureEvent, ErasureScope
from sluice.frozen import Frozen


class ErasureRequest(Frozen):
    """What to erase: every row of one trajectory, a tenant, or a data subject."""

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


class ErasurePlace(BaseModel):
    """One place that held (or may hold) a copy: what the erasure did there, what is left to do."""

    place: str = Field(description="duckdb, topics, stages, proxy, exports, checkpoints.")
    removed: str = Field(description="What was removed (or 'nothing held').")
    operator_action: str | None = Field(None, description="What the operator must still do, if anything.")
    paths: list[str] = Field(default_factory=list, description="Files that hold erased data.")
    versions: list[str] = Field(
        default_factory=list, description="weights: the policy versions tainted (trained on erased data)."
    )


class ErasureResult(BaseModel):
    """The audit entry of one erasure (a row of the ``erasures`` table) and its receipt (``places``)."""

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
    places: list[ErasurePlace] = Field(default_factory=list, description="The receipt, place by place.")


__all__ = ["ErasureEvent", "ErasurePlace", "ErasureRequest", "ErasureResult", "ErasureScope"]
