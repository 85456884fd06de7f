"""The plug point of replay grading: a check caps the grade of a trajectory, with a reason.

A check returns findings ``(ceiling, reason)``; the grade is the lowest ceiling found (deterministic when
nothing caps it). Checks read only the recorded envelope of the assembled trajectory.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import NamedTuple

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


# Findings are frozen values and their reasons repeat from one version to the next (``<reason>:<step>``):
# each is built once and shared.
@functools.lru_cache(maxsize=4096)
def approximate(reason: str) -> ReplayFinding:
    return ReplayFinding(ceiling="approximate", reason=reason)


@functools.lru_cache(maxsize=4096)
def non_replayable(reason: str) -> ReplayFinding:
    return ReplayFinding(ceiling="non_replayable", reason=reason)


def tool_calls(step: StepEvent) -> list[ToolCall]:
    """Every tool call the step's choices made."""
    return [tc for choice in step.action.choices for tc in (choice.message.tool_calls or [])]


class StepCalls(NamedTuple):
    step: StepEvent
    calls: list[ToolCall]
    answered: set[str]  # ids of the calls whose results the step recorded
    last: bool  # the trajectory's last step: its calls may stay unanswered


def steps_with_calls(trajectory: Trajectory) -> Iterator[StepCalls]:
    """The trajectory's steps in order, each with its tool calls and the ids of those answered."""
    steps = sorted(trajectory.steps, key=lambda s: s.step_index)
    for pos, step in enumerate(steps):
        answered = {r.tool_call_id for r in step.action_result.tool_results}
        yield StepCalls(step, tool_calls(step), answered, pos == len(steps) - 1)
