"""The multi-step plug point: a task the agent solves by calling real tools between model calls.

The agent offers the task's ``tools`` (OpenAI function definitions with JSON-schema parameters) and forces
the first call to use one (``tool_choice``); the harness runs each call with ``run_tool`` and sends the
result back as a ``tool`` message with the whole history; the last call answers in text. The checker grades
the whole trajectory with ``grade_episode``: the tool calls made and the final reply. ``grade`` (what the
control plane's grader calls on a recorded reply) checks the final reply alone.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

from pipeline.learn.tasks.base import Problem, VerifiableTask


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made: the function's name and its arguments as the JSON text it wrote."""

    name: str
    arguments: str


class ToolTask(VerifiableTask):
    tools: list[dict[str, Any]] = []
    tool_max_tokens: int = 24  # what the forced call may write

    def tool_choice(self) -> dict[str, Any]:
        """The first call's ``tool_choice``: the task's first tool, by name."""
        return {"type": "function", "function": {"name": self.tools[0]["function"]["name"]}}

    @abstractmethod
    def run_tool(self, name: str, arguments: str) -> str:
        """The tool's result as the ``tool`` message's content (JSON text); a bad call gets an error object."""

    @abstractmethod
    def grade_episode(self, problem: Problem, calls: list[ToolCall], reply: str) -> float:
        """1.0 when the calls and the final reply are both right, else 0.0."""
