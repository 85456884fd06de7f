"""Hand finished steps to the publisher before the agent's response completes, and never lose one silently.

Inside a request (``collect_steps``, set by the proxy's durability middleware) ``record_step`` only
queues the step; the middleware builds and publishes it (``publish_collected``) just before it sends the
next piece of the response, and sends that piece once the publisher says the event is durable. So the
agent never holds an answer whose step could still be lost, and a streamed step costs the agent nothing
until its last chunk. Outside a request the build + encode runs on the event loop right after the
current callback (``loop.call_soon``). If an event can not be built (a backend answered something the
protocol can not hold), a ``DeadLetter`` with the reason goes to the dead-letter topic instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import TYPE_CHECKING

from pydantic import ValidationError

from pipeline.proxy.exceptions import ApiError
from pipeline.proxy.step_event import StepRecord, build_step_event
from sluice.errors import validation_summary
from sluice.events import DeadLetter, encode

if TYPE_CHECKING:
    from pipeline.proxy.state import ProxyState

log = logging.getLogger(__name__)

_collected: contextvars.ContextVar[list[StepRecord] | None] = contextvars.ContextVar(
    "sluice_collected_steps", default=None
)


def _reason(err: Exception) -> str:
    if isinstance(err, ValidationError):
        return ("step event invalid: " + validation_summary(err))[:2000]
    if isinstance(err, ApiError):  # canonical.event_message: a field path and a reason, no values
        return ("step event invalid: " + err.message)[:2000]
    return f"step event could not be built: {type(err).__name__}"


def _publish_step(state: ProxyState, rec: StepRecord) -> None:
    key = rec.plan.trajectory_id
    try:
        data = encode(build_step_event(rec))
    except Exception as err:  # noqa: BLE001 - whatever broke, the step must not vanish without a trace
        reason = _reason(err)  # never the offending values: they may be raw traffic
        log.error("step %s/%d could not be recorded: %s", key, rec.plan.step_index, reason)
        letter = DeadLetter(stage="proxy", reason=reason, error_type=type(err).__name__, key=key)
        state.publisher.publish(state.topics.deadletter, key, encode(letter))
        state.metrics.events.labels("deadletter").inc()
        return
    state.publisher.publish(state.topics.steps, key, data)
    state.metrics.events.labels("step").inc()


def _after_response(state: ProxyState, rec: StepRecord) -> None:
    state.linker.settle(rec.plan)  # exact prefix hashes, so the linker keeps no message text
    state.step_recorded(rec.plan.tenant, rec.plan.trajectory_id, rec.plan.step_index)
    if state.publishing:  # proxy.publish=false (benchmarks of the bare proxy): no event is built at all
        _publish_step(state, rec)


def collect_steps(steps: list[StepRecord]) -> contextvars.Token[list[StepRecord] | None]:
    """Steps finished in this request's context go to ``steps`` until ``publish_collected``."""
    return _collected.set(steps)


def end_collecting(token: contextvars.Token[list[StepRecord] | None]) -> None:
    _collected.reset(token)


def publish_collected(state: ProxyState, steps: list[StepRecord]) -> None:
    """Build and publish the collected steps, in the order they finished."""
    while steps:
        _after_response(state, steps.pop(0))


def record_step(state: ProxyState, rec: StepRecord) -> None:
    """Publish ``rec`` as a StepEvent before the request's response goes on (or soon, outside one)."""
    collected = _collected.get()
    if collected is not None:
        collected.append(rec)
        return
    try:
        asyncio.get_running_loop().call_soon(_after_response, state, rec)
    except RuntimeError:  # no loop (unit use): now
        _after_response(state, rec)


def step_headers(rec: StepRecord) -> dict[str, str]:
    """Response headers that tell the agent where its call landed (for the rewards/feedback API)."""
    return {"x-sluice-trajectory-id": rec.plan.trajectory_id, "x-sluice-step-index": str(rec.plan.step_index)}
