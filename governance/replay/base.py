"""The plug point of replay grading: a check caps the grade of a trajectory, with a reason.

A check returns findings ``(ceiling, reason)``; the grade is the lowest ceiling found (deterministic when
nothing caps it). Checks read only the recorded envelope of the assembled trajectory.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from pydantic import BaseModel, ConfigDict

from governance.config import ReplayConfig
from sluice.events import ReplayGradeName, StepEvent, ToolCall, Trajectory


class ReplayFinding(BaseModel):
    model_config = ConfigDict(frozen=True)

    ceiling: ReplayGradeName
    reason: str


class ReplayCheck(ABC):
    name: str

    @abstractmethod
    def check(self, trajectory: Trajectory, cfg: ReplayConfig) -> list[ReplayFinding]:
        """Findings that cap the grade (empty: nothing to say)."""


def approximate(reason: str) -> ReplayFinding:
    return ReplayFinding(ceiling="approximate", reason=reason)


def non_replayable(reason: str) -> ReplayFinding:
    return ReplayFinding(ceiling="non_replayable", reason=reason)


def tool_calls(step: StepEvent) -> list[ToolCall]:
    """Every tool call the step's choices made."""
    return [tc for choice in step.action.choices for tc in (choice.message.tool_calls or [])]
