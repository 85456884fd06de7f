"""Surfaces: the per-call context (caller, trajectory hint, session, recorded headers, clock).

Trajectory ids are scoped by tenant (``sluice.events.scoped_trajectory_id``): an id the agent names,
bare (``run-7``) or scoped (``acme~run-7``), resolves to its own tenant's id space. An id scoped by
another tenant is a 404 before anything is read or published, and an erased id is a 410, so one
tenant can neither write into nor learn of another's trajectory, and an erased one never comes back.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from starlette.requests import Request

from pipeline.proxy.config import ProxyConfig
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.linking.history_linker import LinkedBy
from pipeline.proxy.surfaces.auth import Caller
from sluice.events import (
    LOCAL_ID_PATTERN,
    TASK_ID_HEADER,
    TENANT_PATTERN,
    TENANT_SEP,
    scoped_trajectory_id,
    trajectory_owner,
    utcnow,
)

TRAJECTORY_ID = re.compile(rf"^(?:{TENANT_PATTERN}{TENANT_SEP})?{LOCAL_ID_PATTERN}$")


@dataclass(slots=True)
class CallContext:
    caller: Caller
    explicit_id: str | None
    explicit_by: LinkedBy
    session_id: str | None
    headers: dict[str, str]
    started_at: datetime
    t0: float  # perf_counter at arrival
    task_id: str | None = None  # the agent's task/group id (GRPO groups by it)


def check_trajectory_id(value: str, where: str) -> str:
    if not TRAJECTORY_ID.match(value):
        raise ApiError(
            400,
            f"invalid trajectory id {value[:40]!r} in {where}: 1-128 characters of A-Z a-z 0-9 . _ : -, "
            f"optionally after the tenant and {TENANT_SEP!r}",
            param=where,
        )
    return value


def resolve_trajectory_id(state: Any, caller: Caller, value: str, where: str) -> str:
    """The caller's scoped id for ``value``; 404 when it names another tenant's, 410 when erased."""
    value = check_trajectory_id(value, where)
    owner = trajectory_owner(value)
    if owner is None:
        value = scoped_trajectory_id(caller.tenant, value)
    elif owner != caller.tenant:
        raise ApiError(404, f"no trajectory {value[:80]!r} for this API key", code="trajectory_not_found")
    if state.recorder.is_erased(value):
        raise ApiError(410, f"trajectory {value[:80]!r} was erased", code="trajectory_erased")
    return value


def call_context(request: Request) -> CallContext:
    """Authenticate (401 before anything is read) and collect what the step event will carry."""
    t0 = time.perf_counter()
    state = request.app.state.sluice
    cfg = state.config.proxy
    # a plain dict of the (already lower-case) ASGI headers: Starlette's Headers scans a list per lookup
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.scope["headers"]}
    caller = state.keys.caller(headers)
    explicit, by = None, "header"
    path_id = request.path_params.get("trajectory_id")
    if path_id is not None:
        explicit, by = resolve_trajectory_id(state, caller, path_id, "path"), "path"
    else:
        header_id = headers.get(cfg.trajectory_header)
        if header_id:
            explicit = resolve_trajectory_id(state, caller, header_id.strip(), cfg.trajectory_header)
    session = headers.get(cfg.session_header)
    task = (headers.get(TASK_ID_HEADER) or "").strip()
    return CallContext(
        caller=caller,
        explicit_id=explicit,
        explicit_by=by,  # type: ignore[arg-type]
        session_id=session[:256] if session else None,
        headers=state.header_recorder.record(headers),
        started_at=utcnow(),
        t0=t0,
        task_id=task[:256] or None,
    )


ALWAYS_SENSITIVE = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "set-cookie", "proxy-authorization"}
)


class HeaderRecorder:
    def __init__(self, config: ProxyConfig) -> None:
        sensitive = ALWAYS_SENSITIVE | {h.lower() for h in config.sensitive_headers}
        self.allowed = tuple(h.lower() for h in config.header_allowlist if h.lower() not in sensitive)
        self.sensitive = sensitive

    def record(self, headers: Mapping[str, str]) -> dict[str, str]:
        out = {}
        for name in self.allowed:
            value = headers.get(name)
            if value is not None:
                out[name] = value[:512]
        return out
