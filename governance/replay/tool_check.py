"""Tools: a replay feeds recorded tool results back instead of re-running tools, so every tool call
answered within the trajectory needs its result recorded and its tool version known. Calls of the last
step may stay unanswered (the trajectory ended on them)."""

from __future__ import annotations

from governance.config import ReplayConfig
from governance.replay.base import ReplayCheck, ReplayFinding, approximate, steps_with_calls
from sluice.events import Trajectory


class ToolCheck(ReplayCheck):
    name = "tools"

    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        out = []
        for step, calls, answered, last in steps_with_calls(trajectory):
            for call in calls:
                if call.id not in answered and not last:
                    out.append(approximate(f"tool_result_missing:{call.name}@{step.step_index}"))
                if call.name not in step.metadata.tool_versions:
                    out.append(approximate(f"tool_version_unknown:{call.name}@{step.step_index}"))
        return out
