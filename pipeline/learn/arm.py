"""One arm of learning traffic: agents ask each problem ``group_size`` times (one GRPO group, one task id)
through the proxy and the checker grades every reply, until a deadline.

    arm = Arm(agent, checker, group_size=4, groups_in_flight=2)
    await arm.run(until=time.time() + 600)
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass, field

import openai

from pipeline.learn.agents import TaskAgent
from pipeline.learn.checker import Checker, Graded

log = logging.getLogger("sluice.learn")


def group_task_id(task: str, messages: list[dict[str, str]]) -> str:
    """The task id a group's attempts share: the task's name and a short hash of the problem."""
    digest = hashlib.sha256(repr(messages).encode()).hexdigest()[:10]
    return f"{task}:{digest}"


@dataclass
class Arm:
    agent: TaskAgent
    checker: Checker
    group_size: int = 4
    groups_in_flight: int = 2
    failures: list[str] = field(default_factory=list)

    @property
    def graded(self) -> list[Graded]:
        return self.checker.graded

    async def _group(self) -> None:
        task, problem = self.agent.draw()
        gid = group_task_id(problem.task, problem.messages)
        attempts = await asyncio.gather(
            *(
                self.agent.attempt(
                    task, problem, f"{self.agent.arm or 'learn'}-{problem.task}-{uuid.uuid4().hex[:12]}", gid
                )
                for _ in range(self.group_size)
            ),
            return_exceptions=True,
        )
        for a in attempts:
            if isinstance(a, BaseException):
                if not isinstance(a, openai.APIError | OSError):
                    raise a
                self.failures.append(repr(a))
                continue
            await self.checker.submit(a)

    async def _worker(self, until: float) -> None:
        while time.time() < until:
            await self._group()

    async def run(self, until: float) -> None:
        await asyncio.gather(*(self._worker(until) for _ in range(self.groups_in_flight)))
