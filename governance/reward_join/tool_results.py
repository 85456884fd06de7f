"""Tool results go to the step whose action asked for them.

An agent answers step t's tool calls in step t+1's observation (``role="tool"`` messages carrying the
``tool_call_id``); when the trajectory is assembled those answers are copied into step t's
``action_result.tool_results`` with the tool's name and recorded version. Calls are matched by id against
every earlier step, so an answer delayed by a step still finds its call.
"""

from __future__ import annotations

from governance.replay.base import tool_calls
from sluice.events import StepEvent, ToolCall, ToolResult
from sluice.model_update import updated


def fresh_lists(step: StepEvent) -> StepEvent:
    """A shallow copy whose ``rewards`` and ``tool_results`` lists can be appended to without touching
    the original (deep copies of whole steps cost ~1 ms each)."""
    result = updated(step.action_result, {"tool_results": list(step.action_result.tool_results)})
    return updated(step, {"rewards": list(step.rewards), "action_result": result})


def attach_tool_results(steps: list[StepEvent]) -> list[StepEvent]:
    """Copies of ``steps`` (in the given order) with tool answers attached to the asking step; the
    input steps are left untouched."""
    out = [fresh_lists(s) for s in steps]
    calls: dict[str, tuple[StepEvent, ToolCall]] = {}
    for step in out:
        for msg in step.observation.messages:
            if msg.role != "tool" or not msg.tool_call_id or msg.tool_call_id not in calls:
                continue
            asking, call = calls[msg.tool_call_id]
            results = asking.action_result.tool_results
            if any(r.tool_call_id == msg.tool_call_id for r in results):
                continue
            extra = msg.model_extra or {}
            results.append(
                ToolResult(
                    tool_call_id=msg.tool_call_id,
                    tool_name=call.name,
                    tool_version=asking.metadata.tool_versions.get(call.name),
                    content=msg.content,
                    is_error=bool(extra.get("is_error", False)),
                )
            )
        for call in tool_calls(step):
            if call.id:
                calls[call.id] = (step, call)
    return out
