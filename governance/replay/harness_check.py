"""Harness: without a prompt/harness fingerprint the system prompt and tool set of a replay cannot be
shown to be the same (approximate)."""

from __future__ import annotations

from governance.config import ReplayConfig
from governance.replay.base import ReplayCheck, ReplayFinding, approximate
from sluice.events import Trajectory


class HarnessCheck(ReplayCheck):
    name = "harness"

    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        return [
            approximate(f"harness_fingerprint_missing:{step.step_index}")
            for step in trajectory.steps
            if not step.metadata.harness_fingerprint
        ]
