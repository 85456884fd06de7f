"""The reward-function plug point: score one completion of a task, given what the task knows.

A function returns a float, or None when it does not apply to this sample (e.g. the logged reward for a
fresh rollout). Exceptions and timeouts are turned into recorded failures by ``scoring.safe_score``; a
reward function never has to protect the trainer from itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class RewardContext(BaseModel):
    """What a grader may look at besides the completion."""

    model_config = ConfigDict(frozen=True)

    task: str = ""
    prompt: str = Field("", description="Text of the last user message.")
    reference: str | None = Field(None, description="The task's reference answer or tests, when known.")
    logged_reward: float | None = Field(None, description="Trajectory.reward of the traffic sample.")
    is_logged: bool = Field(False, description="This completion is the logged traffic sample itself.")
    metadata: dict[str, Any] = Field(default_factory=dict)


class RewardOutcome(BaseModel):
    """A score, or a recorded failure (value 0.0, ``failed`` set, ``error`` says why)."""

    model_config = ConfigDict(frozen=True)

    value: float = 0.0
    failed: bool = False
    error: str | None = None


class RewardFunction(ABC):
    """Scores a completion. Implementations are small, pure where they can be, one per file."""

    name: str = "reward"

    @abstractmethod
    def score(self, completion: str, ctx: RewardContext) -> float | None:
        """The reward, or None when this function does not apply to the sample."""
