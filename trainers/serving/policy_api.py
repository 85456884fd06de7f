"""The server's side of the policy-version contract (``sluice.policy_http``, where the paths, headers and
models are defined once for the server and its clients): the response extension that names the versions
that answered. The contract's names are re-exported for the server's modules.
"""

from __future__ import annotations

from sluice.policy_http import (
    DISCARD_PATH,
    EXTENSION_FIELD,
    FALLBACK_HEADER,
    FORGET_PATH,
    PARENT_HEADER,
    POLICY_PATH,
    PROMOTE_PATH,
    REQUEST_VERSION_HEADER,
    ROLE_HEADER,
    ROLLBACK_PATH,
    SAFETENSORS_CONTENT_TYPE,
    VERSION_HEADER,
    WEIGHTS_PATH,
    ForgetReply,
    ForgetRequest,
    PolicyHistoryEntry,
    PolicyStatus,
    PushRequest,
    PushRole,
    RollbackRequest,
    SwapReply,
    VersionInfo,
    VersionName,
    VersionRequest,
)

__all__ = [
    "DISCARD_PATH",
    "EXTENSION_FIELD",
    "FALLBACK_HEADER",
    "FORGET_PATH",
    "ForgetReply",
    "ForgetRequest",
    "PARENT_HEADER",
    "POLICY_PATH",
    "PROMOTE_PATH",
    "PolicyHistoryEntry",
    "PolicyStatus",
    "PushRequest",
    "PushRole",
    "REQUEST_VERSION_HEADER",
    "ROLE_HEADER",
    "ROLLBACK_PATH",
    "RollbackRequest",
    "SAFETENSORS_CONTENT_TYPE",
    "SwapReply",
    "VERSION_HEADER",
    "VersionInfo",
    "VersionName",
    "VersionRequest",
    "WEIGHTS_PATH",
]


def extension(versions: list[str], asked: str | None = None) -> dict[str, object]:
    """The response extension field's value: the last version used, every version in order of use, and the
    version asked for when the server answered with another (it does not keep the one asked for)."""
    ordered = list(dict.fromkeys(versions))
    out: dict[str, object] = {"policy_version": ordered[-1] if ordered else None, "policy_versions": ordered}
    if fell_back(ordered, asked):
        out["policy_fallback"] = asked
    return out


def fell_back(versions: list[str], asked: str | None) -> bool:
    return bool(asked) and bool(versions) and asked not in versions
