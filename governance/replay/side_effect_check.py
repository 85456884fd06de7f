"""Side effects: a tool with side effects (``ReplayConfig.nondeterministic_tools`` globs, or declared in
``StepMetadata.side_effects``) cannot be re-run; with its result recorded the replay is approximate,
without it (and the trajectory went on after the call) it is non-replayable."""

from __future__ import annotations

import fnmatch

from governance.config import ReplayConfig
from governance.replay.base import (
    ReplayCheck,
    ReplayFinding,
    approximate,
    non_replayable,
    steps_with_calls,
)
from sluice.events import Trajectory


class SideEffectCheck(ReplayCheck):
    name = "side_effects"

    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        out = []
        for step, calls, answered, last in steps_with_calls(trajectory):
            declared = set(step.metadata.side_effects)
            for call in calls:
                risky = call.name in declared or any(
                    fnmatch.fnmatchcase(call.name, pat) for pat in cfg.nondeterministic_tools
                )
                if not risky:
                    continue
                declared.discard(call.name)
                if call.id in answered:
                    out.append(approximate(f"side_effect:{call.name}@{step.step_index}"))
                elif not last:
                    out.append(non_replayable(f"side_effect_unrecorded:{call.name}@{step.step_index}"))
                else:
                    out.append(approximate(f"side_effect_pending:{call.name}@{step.step_index}"))
            out += [approximate(f"side_effect:{name}@{step.step_index}") for name in sorted(declared)]
        return out
