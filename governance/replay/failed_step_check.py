"""Failed or empty steps: a call that errored or produced no choice has nothing to replay against."""

from __future__ import annotations

from governance.config import ReplayConfig
from governance.replay.base import ReplayCheck, ReplayFinding, non_replayable
from sluice.events import Trajectory


class FailedStepCheck(ReplayCheck):
    name = "failed_steps"

    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        if not trajectory.steps:
            return [non_replayable("no_steps")]
        out = []
        for step in trajectory.steps:
            result = step.action_result
            if result.error is not None or (result.status_code or 0) >= 400:
                out.append(non_replayable(f"step_failed:{step.step_index}"))
            elif not step.action.choices:
                out.append(non_replayable(f"step_without_output:{step.step_index}"))
        return out
