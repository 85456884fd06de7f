"""The checker: grades each attempt with its task's grader and posts the reward through the reward API.

Some rewards are held back and posted later (``late_fraction`` of them, ``late_delay_s`` after the answer),
the way a user's feedback arrives after the fact; the join stage then emits a new version of the
trajectory carrying the reward. Every posted reward is kept with its time, so a benchmark can tell how long
a reward took to reach the policy that serves.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

import httpx

from pipeline.learn.agents import Attempt
from pipeline.learn.http_retry import post_retrying
from pipeline.learn.tasks.base import VerifiableTask
from pipeline.learn.tasks.tool_task import ToolTask


@dataclass
class Graded:
    attempt: Attempt
    reward: float
    late: bool
    posted_at: float | None = None  # time.time() once the reward API accepted it
    status: int | None = None


@dataclass
class Checker:
    """Grades and posts. ``tasks`` by name; rewards go to ``proxy_root``/v1/trajectories/{id}/rewards."""

    proxy_root: str
    tasks: dict[str, VerifiableTask]
    late_fraction: float = 0.25
    late_delay_s: float = 20.0
    seed: int = 0
    source: str | None = None  # the reward's source name (default ``checker:<task>``)
    graded: list[Graded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._http = httpx.AsyncClient(timeout=30)
        self._late: set[asyncio.Task] = set()

    def grade(self, attempt: Attempt) -> Graded:
        task = self.tasks[attempt.problem.task]
        if isinstance(task, ToolTask):  # the whole trajectory: the tool calls made and the final reply
            reward = task.grade_episode(attempt.problem, attempt.tool_calls, attempt.reply)
        else:
            reward = task.grade(attempt.problem, attempt.reply)
        g = Graded(attempt, reward, self._rng.random() < self.late_fraction)
        self.graded.append(g)
        return g

    async def submit(self, attempt: Attempt) -> Graded:
        """Grade now; post now, or schedule the post ``late_delay_s`` later for a late one."""
        g = self.grade(attempt)
        if g.late:
            t = asyncio.create_task(self._post_later(g))
            self._late.add(t)
            t.add_done_callback(self._late.discard)
        else:
            await self._post(g)
        return g

    async def _post_later(self, g: Graded) -> None:
        await asyncio.sleep(max(0.0, g.attempt.answered_at + self.late_delay_s - time.time()))
        await self._post(g)

    async def _post(self, g: Graded) -> None:
        a = g.attempt
        resp = await post_retrying(
            self._http,
            f"{self.proxy_root.rstrip('/')}/v1/trajectories/{a.trajectory_id}/rewards",
            headers={"Authorization": f"Bearer {a.api_key}"},
            json={
                "id": f"checker-{a.trajectory_id}",  # a retried post is the same reward
                "name": "checker",
                "value": g.reward,
                "source": self.source or f"checker:{a.problem.task}",
                "comment": "late review" if g.late else "graded on answer",
            },
        )
        g.status = resp.status_code
        if resp.status_code < 300:
            g.posted_at = time.time()

    async def drain(self) -> None:
        """Post every late reward still waiting (at the end of a run)."""
        if self._late:
            await asyncio.gather(*list(self._late), return_exceptions=True)

    async def aclose(self) -> None:
        for t in list(self._late):
            t.cancel()
        await self._http.aclose()
