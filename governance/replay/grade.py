"""Replayability grading: deterministic / approximate / non_replayable, with reasons.

Could this trajectory be replayed against the same model and reproduce its outputs? Decided from the
recorded envelope only, check by check (one file each); the grade is the lowest any check allows.

non_replayable — something needed is missing:
  no steps; a step failed (upstream error, HTTP status >= 400) or produced no choice; a step without a
  model name; a gap in step indices or a history prefix longer than the earlier steps recorded; a
  side-effecting tool call whose result was not recorded although the trajectory went on after it.
approximate — replayable, but identical output is not guaranteed:
  stochastic sampling (temperature unset or > 0 and no seed); unknown model version; no backend
  fingerprint; no harness/prompt fingerprint; a tool call answered without a recorded result or without a
  recorded tool version; any side effect (``ReplayConfig.nondeterministic_tools`` globs or the step's
  declared ``side_effects``), even with its result recorded.
deterministic — none of the above: greedy or seeded sampling, model version, backend and harness
  fingerprints, tool results and versions all recorded, no side effects.

    grade_replayability(trajectory, cfg) -> ReplayGrade
"""

from __future__ import annotations

from collections.abc import Sequence

from governance.config import ReplayConfig
from governance.replay.base import ReplayCheck, ReplayFinding
from governance.replay.continuity_check import ContinuityCheck
from governance.replay.failed_step_check import FailedStepCheck
from governance.replay.harness_check import HarnessCheck
from governance.replay.model_identity_check import ModelIdentityCheck
from governance.replay.sampling_check import SamplingCheck
from governance.replay.side_effect_check import SideEffectCheck
from governance.replay.tool_check import ToolCheck
from sluice.events import GRADE_RANK, ReplayGrade, ReplayGradeName, Trajectory
from sluice.step_refs import compact_step_reasons

DEFAULT_CHECKS: tuple[ReplayCheck, ...] = (
    FailedStepCheck(),
    ContinuityCheck(),
    ModelIdentityCheck(),
    SamplingCheck(),
    HarnessCheck(),
    ToolCheck(),
    SideEffectCheck(),
)


def replay_findings(
    trajectory: Trajectory, cfg: ReplayConfig, checks: Sequence[ReplayCheck] = DEFAULT_CHECKS
) -> list[ReplayFinding]:
    return [f for check in checks for f in check.check(trajectory, cfg)]


def grade_replayability(
    trajectory: Trajectory, cfg: ReplayConfig, checks: Sequence[ReplayCheck] = DEFAULT_CHECKS
) -> ReplayGrade:
    """The grade and every reason that lowered it (``["reproducible"]`` when nothing did), the steps a
    reason names merged into ranges (``compact_step_reasons``)."""
    found = replay_findings(trajectory, cfg, checks)
    grade: ReplayGradeName = min(
        (f.ceiling for f in found), key=GRADE_RANK.__getitem__, default="deterministic"
    )
    reasons = compact_step_reasons([f.reason for f in found]) or ["reproducible"]
    return ReplayGrade(grade=grade, reasons=reasons)
