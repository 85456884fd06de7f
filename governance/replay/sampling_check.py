"""Sampling: only greedy decoding (temperature 0) or a recorded seed can reproduce the same output;
anything else (including an unset temperature, which backends default to 1) is approximate."""

from __future__ import annotations

from governance.config import ReplayConfig
from governance.replay.base import ReplayCheck, ReplayFinding, approximate
from sluice.events import Trajectory


class SamplingCheck(ReplayCheck):
    name = "sampling"

    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        out = []
        for step in trajectory.steps:
            sampling = step.metadata.sampling
            if sampling.temperature != 0 and sampling.seed is None:
                out.append(approximate(f"sampling_stochastic:{step.step_index}"))
        return out
