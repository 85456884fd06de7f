"""The verifiable-task plug point: a task draws problems and grades replies to them with its own checker.

A problem carries everything the checker needs (the answer), so grading is a pure function of the problem and
the reply: the agent side, the benchmark and the tests all call ``task.grade(problem, reply)``. A recorded
trajectory keeps the messages but not the answer; a task whose answer can be read back from its own prompt
says so in ``answer_from``, which is what lets the control plane grade recorded traffic with the same checker
(``trainers.tasks.learn_task``).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Problem(BaseModel):
    """One instance of a task: the chat messages an agent sends and the answer its checker expects."""

    model_config = ConfigDict(frozen=True)

    task: str = Field(description="Name of the task that drew it; also the agent's x-sluice-task-id.")
    messages: list[dict[str, Any]]
    answer: str = Field(description="What the checker accepts, in the task's own terms.")


class VerifiableTask(ABC):
    """A family of problems with a grader. ``max_tokens`` is what an agent asks for: enough for a right answer."""

    name: str = "task"
    max_tokens: int = 8

    @abstractmethod
    def draw(self, rng: random.Random) -> Problem:
        """A fresh problem."""

    @abstractmethod
    def grade(self, problem: Problem, reply: str) -> float:
        """1.0 for a reply the checker accepts, else 0.0 (a task may give partial credit in between)."""

    def answer_from(self, messages: list[dict[str, str]]) -> str | None:
        """The answer to a problem of this task, read back from its messages; None when the prompt does
        not hold it (or is not one of this task's)."""
        return None

    def problem_from(self, messages: list[dict[str, str]]) -> Problem | None:
        """The problem a recorded prompt asked, with its answer, when ``answer_from`` can read it."""
        answer = self.answer_from(messages)
        return None if answer is None else Problem(task=self.name, messages=messages, answer=answer)
