"""Trajectory API: ``GET /v1/trajectories/{id}`` and ``GET /v1/trajectories``.

A trajectory is ``pending`` from its first step through this proxy until the sink stores a version of it,
then ``landed``. What is pending comes from the proxy's own record (``seen.py``); what landed, its
versions and rewards, from the store read with the caller's key (``landed.py``). An id this tenant never
used, and any other tenant's id, is a 404 ``trajectory_not_found``: the id resolves in the caller's own
id space first (``resolve_trajectory_id``), so another tenant's trajectory is never read.

    curl -H "Authorization: Bearer $KEY" http://127.0.0.1:8080/v1/trajectories/run-7
    curl -H "Authorization: Bearer $KEY" "http://127.0.0.1:8080/v1/trajectories?state=pending"
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.surfaces.auth import presented_key
from pipeline.proxy.surfaces.context import resolve_trajectory_id
from pipeline.proxy.surfaces.responses import json_response
from pipeline.proxy.trajectories.landed import StoreUnavailable, landed, landed_ids
from pipeline.proxy.trajectories.seen import SeenTrajectory

STATES = ("pending", "landed", "all")
MAX_LIMIT = 500


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()


def _json(payload: dict[str, Any], status: int = 200) -> Response:
    return json_response(json.dumps(payload, default=str).encode(), status=status)


def not_found(trajectory_id: str) -> ApiError:
    return ApiError(
        404, f"no trajectory {trajectory_id[:80]!r} for this API key", code="trajectory_not_found"
    )


def seen_fields(entry: SeenTrajectory | None) -> dict[str, Any]:
    """What this proxy recorded of the trajectory (nulls when it recorded none of its steps)."""
    if entry is None:
        return {"steps_recorded": None, "ended": None, "first_step_at": None, "last_step_at": None}
    return {
        "steps_recorded": entry.steps,
        "ended": entry.ended,
        "first_step_at": _iso(entry.first_step_at),
        "last_step_at": _iso(entry.last_step_at),
    }


async def read_landed(request: Request, tenant: str, trajectory_id: str) -> tuple[dict[str, list], str]:
    """The store's versions and rewards of the trajectory, and whether the store could be read."""
    store = request.app.state.sluice.config.store
    if store is None:
        return {"versions": [], "rewards": []}, "not configured"
    key = presented_key(request.headers)
    try:
        return await run_in_threadpool(landed, store, key, tenant, trajectory_id), "read"
    except StoreUnavailable:
        return {"versions": [], "rewards": []}, "unavailable"


async def get_trajectory(request: Request) -> Response:
    state = request.app.state.sluice
    caller = state.keys.caller(request.headers)
    tid = resolve_trajectory_id(state, caller, request.path_params["trajectory_id"], "path")
    entry = state.seen.get(caller.tenant, tid)
    stored, store = await read_landed(request, caller.tenant, tid)
    if entry is None and not stored["versions"] and not stored["rewards"]:
        if store == "unavailable":
            raise ApiError(503, "the trajectory store cannot be read now; retry", code="store_unavailable")
        raise not_found(tid)
    return _json(
        {
            "object": "trajectory",
            "id": tid,
            "state": "landed" if stored["versions"] else "pending",
            **seen_fields(entry),
            "versions": stored["versions"],
            "rewards": stored["rewards"],
            "store": store,
        }
    )


async def list_trajectories(request: Request) -> Response:
    """The caller's trajectories this proxy recorded steps of, newest first, with their state."""
    state = request.app.state.sluice
    caller = state.keys.caller(request.headers)
    wanted = request.query_params.get("state", "all")
    if wanted not in STATES:
        raise ApiError(400, f"state must be one of {', '.join(STATES)}", param="state")
    try:
        limit = int(request.query_params.get("limit", "50"))
    except ValueError:
        raise ApiError(400, "limit must be an integer", param="limit") from None
    if not 1 <= limit <= MAX_LIMIT:
        raise ApiError(400, f"limit must be 1 to {MAX_LIMIT}", param="limit")
    recent = state.seen.recent(caller.tenant, MAX_LIMIT if wanted != "all" else limit)
    store_cfg, store = state.config.store, "not configured"
    done: set[str] = set()
    if store_cfg is not None:
        key = presented_key(request.headers)
        try:
            ids = [e.trajectory_id for e in recent]
            done = await run_in_threadpool(landed_ids, store_cfg, key, caller.tenant, ids)
            store = "read"
        except StoreUnavailable:
            store = "unavailable"
    rows = []
    for entry in recent:
        row_state = "landed" if entry.trajectory_id in done else "pending"
        if wanted in ("all", row_state):
            rows.append({"id": entry.trajectory_id, "state": row_state, **seen_fields(entry)})
    return _json({"object": "list", "data": rows[:limit], "store": store})


async def known_to_tenant(request: Request, tenant: str, trajectory_id: str) -> bool | None:
    """Whether this tenant used the id: a step through this proxy or a landed version (None: the store
    could not be read and this proxy recorded none of its steps)."""
    if request.app.state.sluice.seen.get(tenant, trajectory_id) is not None:
        return True
    stored, store = await read_landed(request, tenant, trajectory_id)
    if stored["versions"] or stored["rewards"]:
        return True
    return None if store == "unavailable" else False
