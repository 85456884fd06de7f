"""Model identity: no model name makes a step non-replayable; an unknown model version or a missing
backend fingerprint means the same model build cannot be guaranteed (approximate)."""

from __future__ import annotations

from governance.config import ReplayConfig
from governance.replay.base import ReplayCheck, ReplayFinding, approximate, non_replayable
from sluice.events import Trajectory


class ModelIdentityCheck(ReplayCheck):
    name = "model_identity"

    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        out = []
        for step in trajectory.steps:
            meta = step.metadata
            if not meta.gen_ai.request_model:
                out.append(non_replayable(f"model_unknown:{step.step_index}"))
                continue
            if not meta.model_version:
                out.append(approximate(f"model_version_unknown:{step.step_index}"))
            if not meta.backend_fingerprint:
                out.append(approximate(f"backend_fingerprint_missing:{step.step_index}"))
        return out
