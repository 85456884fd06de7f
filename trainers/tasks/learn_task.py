"""A verifiable task of the learning loop (``pipeline.learn.tasks``) as a trainer task: its own checker is
the reward, and the reference answer is read back from the recorded prompt.

The proxy records what the agent asked, not the answer its checker holds; a learn task whose answer is
derivable from the prompt (``VerifiableTask.answer_from``: the extraction record names its city, the sum
names its numbers) can therefore grade any recorded trajectory of it. That is what lets the control plane
grade a weights candidate with the task's true checker (``evolve.graders``) instead of the rewards the
traffic posted:

    evolve:
      graders:
        extraction: {kind: learn, learn_task: extraction}

A prompt the task cannot read its answer from is not graded (the reward is a recorded failure, 0.0).
"""

from __future__ import annotations

import random
from typing import Any

from pipeline.learn.tasks.base import Problem, VerifiableTask
from sluice.events import Trajectory
from trainers.rewards.base import RewardContext, RewardFunction
from trainers.tasks.base import Task, last_user_text


class LearnTaskReward(RewardFunction):
    """The learn task's checker on a completion, given the reference the prompt held."""

    def __init__(self, task: VerifiableTask) -> None:
        self.task = task
        self.name = f"learn:{task.name}"

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        if ctx.reference is None:
            return None
        problem = Problem(task=self.task.name, messages=[{"role": "user", "content": ctx.prompt}],
                          answer=ctx.reference)  # fmt: skip
        return self.task.grade(problem, completion)


class LearnTask(Task):
    """Trainer task wrapping one ``VerifiableTask``: reference from the prompt, reward from its checker."""

    def __init__(self, task: VerifiableTask, timeout_s: float = 10.0) -> None:
        super().__init__(LearnTaskReward(task), timeout_s)
        self.task = task
        self.name = task.name

    def reference(self, messages: list[dict[str, Any]], trajectory: Trajectory | None = None) -> str | None:
        return self.task.answer_from([{"role": "user", "content": last_user_text(messages)}])

    def make_prompt(self, rng: random.Random) -> tuple[list[dict[str, Any]], str]:
        problem = self.task.draw(rng)
        return list(problem.messages), problem.answer
