"""The per-call context every surface needs: caller, trajectory hint, session, recorded headers, clock."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime

from starlette.requests import Request

from pipeline.proxy.auth import Caller
from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.linking import LinkedBy
from sluice.events import TASK_ID_HEADER, utcnow

TRAJECTORY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


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
            f"invalid trajectory id {value[:40]!r} in {where}: 1-128 characters of A-Z a-z 0-9 . _ : -",
            param=where,
        )
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
        explicit, by = check_trajectory_id(path_id, "path"), "path"
    else:
        header_id = headers.get(cfg.trajectory_header)
        if header_id:
            explicit = check_trajectory_id(header_id.strip(), cfg.trajectory_header)
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
