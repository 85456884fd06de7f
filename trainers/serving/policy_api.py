"""The policy-version contract of `sluice serve-model`, defined once for the server and its clients.

Every model response names the policy version that produced it: header ``x-sluice-policy-version`` and the
top-level extension field ``"sluice": {"policy_version": v, "policy_versions": [...]}``. The weight API:

    GET  /v1/policy             -> PolicyStatus
    POST /v1/policy/weights     JSON PushRequest, or raw safetensors bytes with the version in the header
                                -> SwapReply (409 reused version, 400 unknown tensor names / shapes)
    POST /v1/policy/rollback    JSON RollbackRequest -> SwapReply (404 when the version is not kept)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.events import POLICY_EXTENSION_FIELD, POLICY_VERSION_HEADER

VERSION_HEADER = POLICY_VERSION_HEADER
EXTENSION_FIELD = POLICY_EXTENSION_FIELD

SAFETENSORS_CONTENT_TYPE = "application/octet-stream"
POLICY_PATH = "/v1/policy"
WEIGHTS_PATH = "/v1/policy/weights"
ROLLBACK_PATH = "/v1/policy/rollback"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class PolicyHistoryEntry(_Model):
    version: str
    action: Literal["load", "update", "rollback"]
    at: float = Field(description="Unix time (seconds) the version started serving.")
    swap_ms: float = 0.0
    tensors: int = Field(0, description="Tensors the update replaced (0 for load and rollback).")


class PolicyStatus(_Model):
    model: str
    serving_version: str
    versions: list[str] = Field(description="Kept versions (rollback targets), oldest first.")
    history: list[PolicyHistoryEntry] = Field(default_factory=list)


class PushRequest(_Model):
    """JSON body of a weight push from the same machine: a safetensors file the server reads itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: str = Field(min_length=1, max_length=128)
    path: str = Field(min_length=1)


class RollbackRequest(_Model):
    model_config = ConfigDict(frozen=True, extra="forbid")
    version: str = Field(min_length=1, max_length=128)


class SwapReply(_Model):
    serving_version: str
    swap_ms: float = Field(description="How long generation paused for the swap (between batches).")
    load_ms: float = Field(0.0, description="Reading and checking the tensors, while generation went on.")
    wait_ms: float = Field(0.0, description="Waiting for the running batch to finish before swapping.")
    tensors: int = 0
    versions: list[str] = Field(default_factory=list)


def extension(versions: list[str]) -> dict[str, object]:
    """The response extension field's value: the last version used, and every version in order of use."""
    ordered = list(dict.fromkeys(versions))
    return {"policy_version": ordered[-1] if ordered else None, "policy_versions": ordered}
