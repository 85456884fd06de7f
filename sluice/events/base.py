"""The ground every event model stands on: schema versions, ids and times, how a trajectory id names its
tenant, and the base models (closed to unknown fields, or open where agents' SDKs vary).

    pytest tests/sluice/test_events.py
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

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


class _Event(_Model):
    schema_version: str = SCHEMA_VERSION
    event_id: str = Field(default_factory=new_id, description="Stable identity: duplicates share it.")
    trajectory_id: str
    tenant: str
    created_at: datetime = Field(default_factory=utcnow)
