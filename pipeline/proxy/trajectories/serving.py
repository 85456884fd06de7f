"""Trajectory API: validate, publish a ``RewardEvent`` / ``TrajectoryEndEvent``, answer 202.

Rewards may arrive before, during or long after the trajectory: with ``proxy.rewards_before_steps`` (the
default) nothing here checks that it exists (the reward-join stage does); with it off, a reward or
feedback for an id this tenant has no step of (through this proxy, or landed in the store) is a 404
``trajectory_not_found``. The id resolves in the caller's own id space (``resolve_trajectory_id``): an id
scoped by another tenant is a 404 and an erased one a 410, before anything is published.
An end event goes on the steps topic with the steps' key, so it is ordered after them.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.surfaces.context import resolve_trajectory_id
from pipeline.proxy.surfaces.request import parse_json_object, read_body
from pipeline.proxy.surfaces.responses import json_response
from pipeline.proxy.trajectories.protocol import EndRequest, FeedbackRequest, RewardRequest
from pipeline.proxy.trajectories.reading import known_to_tenant, not_found
from sluice.errors import validation_problems
from sluice.events import Consent, Governance, Reward, RewardEvent, TrajectoryEndEvent, new_id


async def _parse(request: Request, model: type[BaseModel], allow_empty: bool = False) -> Any:
    body = await read_body(request, request.app.state.sluice.config.proxy.max_body_bytes)
    data = {} if allow_empty and not body.strip() else parse_json_object(body)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        loc, msg = validation_problems(err)[0]
        raise ApiError(400, f"{loc}: {msg}" if loc else msg, param=loc or None) from None


def _accepted(payload: dict[str, Any]) -> Response:
    return json_response(json.dumps({**payload, "status": "accepted"}).encode(), status=202)


def _publish_reward(request: Request, reward: Reward, client_id: str | None) -> Response:
    state = request.app.state.sluice
    caller = state.keys.caller(request.headers)
    tid = resolve_trajectory_id(state, caller, request.path_params["trajectory_id"], "path")
    event = RewardEvent(
        event_id=f"reward:{caller.tenant}:{client_id}" if client_id else new_id(),
        trajectory_id=tid,
        tenant=caller.tenant,
        reward=reward,
    )
    state.recorder.record_reward(event)
    return _accepted({"id": reward.reward_id, "event_id": event.event_id, "trajectory_id": tid})


async def _check_target(request: Request) -> None:
    """401, 404 or 410 before the body is read."""
    state = request.app.state.sluice
    caller = state.keys.caller(request.headers)
    tid = resolve_trajectory_id(state, caller, request.path_params["trajectory_id"], "path")
    if state.config.proxy.rewards_before_steps:
        return
    if await known_to_tenant(request, caller.tenant, tid) is False:  # None: cannot tell, keep the reward
        raise not_found(tid)


def _reward(req: RewardRequest | FeedbackRequest, **fields: Any) -> Reward:
    """The reward a request posts: its own id (or a new one), source and step, and ``fields``."""
    return Reward(reward_id=req.id or new_id(), source=req.source, step_index=req.step, **fields)


async def post_reward(request: Request) -> Response:
    await _check_target(request)
    req: RewardRequest = await _parse(request, RewardRequest)
    reward = _reward(req, name=req.name, kind=req.kind, value=req.value, critique=req.text)
    return _publish_reward(request, reward, req.id)


async def post_feedback(request: Request) -> Response:
    await _check_target(request)
    req: FeedbackRequest = await _parse(request, FeedbackRequest)
    reward = _reward(req, name=req.kind, kind="feedback", critique=req.detail)
    return _publish_reward(request, reward, req.id)


async def post_end(request: Request) -> Response:
    state = request.app.state.sluice
    caller = state.keys.caller(request.headers)
    tid = resolve_trajectory_id(state, caller, request.path_params["trajectory_id"], "path")
    req: EndRequest = await _parse(request, EndRequest, allow_empty=True)
    known = state.recorder.end(caller.tenant, tid)
    event = TrajectoryEndEvent(
        trajectory_id=tid,
        tenant=caller.tenant,
        step_count=req.step_count if req.step_count is not None else known,
        outcome=req.outcome,
        governance=Governance(
            data_class=caller.data_class,
            consent=Consent(training=caller.consent_training),
            subject_ids=list(caller.subject_ids),
        ),
    )
    state.recorder.record_end(event)
    return _accepted({"event_id": event.event_id, "trajectory_id": tid, "step_count": event.step_count})
