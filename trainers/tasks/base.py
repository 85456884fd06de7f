"""The task plug point. A task knows its reference answer and owns its reward function, so the trainer and
the replay checks grade the same way: ``task.grade(completion, task.context(...))``.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any

from sluice.events import Trajectory
from trainers.rewards.base import RewardContext, RewardFunction, RewardOutcome
from trainers.rewards.scoring import safe_score


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content or ""
    return ""


class Task(ABC):
    name: str = "task"

    def __init__(self, reward: RewardFunction, timeout_s: float = 10.0) -> None:
        self.reward = reward
        self.timeout_s = timeout_s

    @abstractmethod
    def reference(self, messages: list[dict[str, Any]], trajectory: Trajectory | None = None) -> str | None:
        """The reference answer (or tests) for this prompt, when the task can know it."""

    def context(
        self,
        messages: list[dict[str, Any]],
        reference: str | None,
        logged_reward: float | None = None,
        is_logged: bool = False,
    ) -> RewardContext:
        return RewardContext(
            task=self.name,
            prompt=last_user_text(messages),
            reference=reference,
            logged_reward=logged_reward,
            is_logged=is_logged,
        )

    def grade(self, completion: str, ctx: RewardContext) -> RewardOutcome:
        """Score with the task's own reward function; failures are recorded, never raised."""
        return safe_score(self.reward, completion, ctx, self.timeout_s)

    def make_prompt(self, rng: random.Random) -> tuple[list[dict[str, Any]], str]:
        """A fresh prompt and its reference (toy tasks only: tests, demos and benchmarks)."""
        raise NotImplementedError(f"task {self.name} does not generate prompts")
