"""The model servers' weight API and policy-version contract, defined once for `sluice serve-model`
(``trainers.serving``) and every client: the trainer pushes to it, the control plane promotes and discards
on it, an erasure rolls back through it (``sluice.policy_client``).

A server holds several versions at once: the *default* (what a request that picks none gets), *candidates*
(loaded, served only to requests that ask for them by name) and *kept* older versions (rollback targets).
A request picks one with the header ``x-sluice-policy-version: NAME``; a name the server does not keep is
answered by the default and the response carries ``x-sluice-policy-fallback: NAME``. Every model response
names the version that produced it: header ``x-sluice-policy-version`` and the top-level extension field
``"sluice": {"policy_version": v, "policy_versions": [...], "policy_fallback": asked}`` (the last only on
a fallback). The weight API (errors in OpenAI's JSON shape):

    GET  /v1/policy             -> PolicyStatus (every version with its role, parent, tensors and bytes)
    POST /v1/policy/weights     JSON PushRequest {version, path, role?, parent?}, or raw safetensors bytes
                                with the version in x-sluice-policy-version (x-sluice-policy-role,
                                x-sluice-policy-parent optional) -> SwapReply
                                409 reused name or max_versions reached, 404 unknown parent, 400 bad tensors
    POST /v1/policy/promote     JSON VersionRequest -> SwapReply (404 when the version is not kept)
    POST /v1/policy/rollback    JSON VersionRequest -> SwapReply (the same as promote, recorded as rollback)
    POST /v1/policy/discard     JSON VersionRequest -> SwapReply (404 not kept, 409 the default)
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.events import (
    POLICY_EXTENSION_FIELD,
    POLICY_FALLBACK_HEADER,
    POLICY_VERSION_HEADER,
    PolicyRole,
)

POLICY_PATH = "/v1/policy"  # GET: the default version, every version held, their roles and the history
WEIGHTS_PATH = "/v1/policy/weights"  # POST: a new version (served at once, or a candidate)
ROLLBACK_PATH = "/v1/policy/rollback"  # POST {"version"}: a kept version becomes the default again
PROMOTE_PATH = "/v1/policy/promote"  # POST {"version"}: a kept version (a candidate) becomes the default
DISCARD_PATH = "/v1/policy/discard"  # POST {"version"}: the version leaves memory; its name stays used
FORGET_PATH = "/v1/policy/forget"  # POST {"conversations"}: their remembered token history leaves memory

VERSION_HEADER = POLICY_VERSION_HEADER  # on a response: the version that answered
REQUEST_VERSION_HEADER = POLICY_VERSION_HEADER  # on a request: the version it asks for (absent: the default)
FALLBACK_HEADER = POLICY_FALLBACK_HEADER  # on a response: the version asked for, when another answered
ROLE_HEADER = "x-sluice-policy-role"  # on a safetensors push: "serve" (default) or "candidate"
PARENT_HEADER = "x-sluice-policy-parent"  # on a safetensors push: the version its tensors are laid over
EXTENSION_FIELD = POLICY_EXTENSION_FIELD

SAFETENSORS_CONTENT_TYPE = "application/octet-stream"

PushRole = Literal["serve", "candidate"]
VersionName = Annotated[str, Field(min_length=1, max_length=128)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class PolicyHistoryEntry(_Model):
    version: str
    action: Literal["load", "update", "rollback", "promote", "discard"]
    at: float = Field(description="Unix time (seconds) of the change.")
    swap_ms: float = 0.0
    tensors: int = Field(0, description="Tensors the update replaced (0 for the other actions).")
    role: PolicyRole | None = Field(None, description="The version's role after the change (discard: None).")


class VersionInfo(_Model):
    version: str
    role: PolicyRole
    parent: str | None = Field(None, description="The version its tensors were laid over (None: loaded).")
    tensors: int = Field(0, description="Tensors it replaced in its parent.")
    added_bytes: int = Field(0, description="Memory it holds that its parent does not (replaced tensors).")


class PolicyStatus(_Model):
    model: str
    serving_version: str = Field(description="The default version: what a request that picks none gets.")
    versions: list[str] = Field(description="Every version in memory, oldest first.")
    candidates: list[str] = Field(default_factory=list)
    kept: list[VersionInfo] = Field(default_factory=list, description="Each version in memory, in detail.")
    max_versions: int = 0
    history: list[PolicyHistoryEntry] = Field(default_factory=list)
    fallbacks: dict[str, int] = Field(
        default_factory=dict,
        description="Version named by a request but not held here -> requests the default answered instead.",
    )


class PushRequest(_Model):
    """JSON body of a weight push from the same machine: a safetensors file the server reads itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: VersionName
    path: str = Field(min_length=1)
    role: PushRole = Field("serve", description="serve: the new default; candidate: default unchanged.")
    parent: str | None = Field(None, description="The version its tensors are laid over (None: the default).")


class VersionRequest(_Model):
    model_config = ConfigDict(frozen=True, extra="forbid")
    version: VersionName


RollbackRequest = VersionRequest  # the body of rollback, promote and discard


class ForgetRequest(_Model):
    """Conversations (the trajectory ids the proxy named them by) whose token history the server drops."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    conversations: list[str] = Field(max_length=100_000)


class ForgetReply(_Model):
    forgotten: int = Field(description="Remembered sequences of those conversations dropped from memory.")


class SwapReply(_Model):
    serving_version: str = Field(description="The default version after the change.")
    version: str = Field("", description="The version the call acted on.")
    role: PolicyRole | None = Field(None, description="Its role after the change (discard: None).")
    parent: str | None = None
    swap_ms: float = Field(0.0, description="How long generation paused for the change (between batches).")
    load_ms: float = Field(0.0, description="Reading and checking the tensors, while generation went on.")
    wait_ms: float = Field(0.0, description="Waiting for the running batch to finish before the change.")
    tensors: int = 0
    added_bytes: int = 0
    versions: list[str] = Field(default_factory=list)
    candidates: list[str] = Field(default_factory=list)
