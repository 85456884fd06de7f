"""Missing data: a gap in step indices, or a step extending a longer history than the earlier steps
provide, means part of the context was never recorded."""

from __future__ import annotations

from governance.config import ReplayConfig
from governance.replay.base import ReplayCheck, ReplayFinding, non_replayable
from sluice.events import Trajectory


class ContinuityCheck(ReplayCheck):
    name = "continuity"

    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        out = []
        indices = sorted({s.step_index for s in trajectory.steps})
        if indices:
            missing = sorted(set(range(indices[0], indices[-1] + 1)) - set(indices))
            if indices[0] != 0:
                missing = sorted(set(range(indices[0])) | set(missing))
            out += [non_replayable(f"step_missing:{i}") for i in missing]
        history = 0
        for step in sorted(trajectory.steps, key=lambda s: s.step_index):
            need = step.observation.prefix_message_count
            if need > history:
                out.append(non_replayable(f"history_gap:{step.step_index}"))
            history = (need or 0) + len(step.observation.messages) + (1 if step.action.choices else 0)
        return out
