"""Agents that solve verifiable tasks through the proxy with the real ``openai`` SDK.

Each attempt is its own trajectory: the agent draws a problem, asks the proxy (``x-sluice-trajectory-id``
and ``x-sluice-task-id`` headers, so the trainer can group attempts at one task the way GRPO needs), ends
the trajectory, and hands the reply to the checker. The agent never sees the answer.

A multi-step task (``ToolTask``) takes several model calls in one trajectory, with the OpenAI tool-calling
protocol: the first call offers the task's tools and forces one (``tool_choice``), the agent runs each
returned call (``task.run_tool``) and re-sends the whole history with the assistant message carrying
``tool_calls`` and one ``tool`` message per result; the last call answers in text (``tool_choice: none``).
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai

from pipeline.learn.http_retry import post_retrying
from pipeline.learn.tasks.base import Problem, VerifiableTask
from pipeline.learn.tasks.tool_task import ToolCall, ToolTask
from sluice.events import POLICY_VERSION_HEADER


@dataclass
class Attempt:
    """One answered problem: what was asked, what came back, which policy served it, and when."""

    trajectory_id: str
    api_key: str
    problem: Problem
    reply: str
    policy_version: str | None
    answered_at: float  # time.time()
    arm: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)  # the calls a multi-step task made
    model_calls: int = 1


def served_version(raw: object, body: dict) -> str | None:
    """The policy version the backend reported: the proxy's response header, else the ``sluice`` field."""
    headers = getattr(raw, "headers", {}) or {}
    found = headers.get(POLICY_VERSION_HEADER)
    if found:
        return found
    ext = body.get("sluice") or {}
    return ext.get("policy_version") if isinstance(ext, dict) else None


class TaskAgent:
    """Answers problems of ``tasks`` through the proxy at ``proxy_root`` as the tenant of ``api_key``."""

    def __init__(
        self,
        proxy_root: str,
        api_key: str,
        model: str,
        tasks: list[VerifiableTask],
        temperature: float = 1.0,
        arm: str = "",
        seed: int = 0,
        timeout_s: float = 120.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        """``headers``: sent on every call besides the trajectory and task ids (e.g. ``x-sluice-subject-id``)."""
        self.root = proxy_root.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.tasks = tasks
        self.temperature = temperature
        self.arm = arm
        self.rng = random.Random(seed)
        self.headers = dict(headers or {})
        self._client = openai.AsyncOpenAI(
            base_url=f"{self.root}/v1", api_key=api_key, max_retries=0, timeout=timeout_s
        )
        self._http = httpx.AsyncClient(timeout=30)

    def draw(self) -> tuple[VerifiableTask, Problem]:
        task = self.rng.choice(self.tasks)
        return task, task.draw(self.rng)

    async def attempt(
        self,
        task: VerifiableTask,
        problem: Problem,
        trajectory_id: str | None = None,
        task_id: str | None = None,
    ) -> Attempt:
        """Ask the proxy once, end the trajectory, return the attempt (raises openai.APIError on failure).
        ``task_id`` (default: the task's name) groups attempts for the trainer."""
        tid = trajectory_id or f"{self.arm or 'learn'}-{problem.task}-{uuid.uuid4().hex[:12]}"
        headers = {**self.headers, "x-sluice-trajectory-id": tid, "x-sluice-task-id": task_id or problem.task}
        calls: list[ToolCall] = []
        messages: list[dict[str, Any]] = list(problem.messages)
        n_calls = 1
        if isinstance(task, ToolTask):
            calls, messages = await self._tool_round(task, messages, headers)
            n_calls += 1
        extra = {"tools": task.tools, "tool_choice": "none"} if isinstance(task, ToolTask) else {}
        raw = await self._client.chat.completions.with_raw_response.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            max_tokens=task.max_tokens,
            temperature=self.temperature,
            extra_headers=headers,
            **extra,  # type: ignore[arg-type]
        )
        completion = raw.parse()
        reply = completion.choices[0].message.content or ""
        version = served_version(raw, completion.model_dump())
        await post_retrying(
            self._http,
            f"{self.root}/v1/trajectories/{tid}/end",
            headers={"Authorization": f"Bearer {self.api_key}"},
            json={"outcome": "answered"},
        )
        return Attempt(tid, self.api_key, problem, reply, version, time.time(), self.arm, calls, n_calls)

    async def _tool_round(
        self, task: ToolTask, messages: list[dict[str, Any]], headers: dict[str, str]
    ) -> tuple[list[ToolCall], list[dict[str, Any]]]:
        """One forced tool call, run here: the calls made and the history with their results."""
        completion = await self._client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            tools=task.tools,  # type: ignore[arg-type]
            tool_choice=task.tool_choice(),  # type: ignore[arg-type]
            max_tokens=task.tool_max_tokens,
            temperature=self.temperature,
            extra_headers=headers,
        )
        message = completion.choices[0].message
        made = [tc for tc in message.tool_calls or [] if tc.type == "function"]
        calls = [ToolCall(tc.function.name, tc.function.arguments) for tc in made]
        turn = {"role": "assistant", "content": message.content,
                "tool_calls": [tc.model_dump(mode="json", exclude_none=True) for tc in made]}  # fmt: skip
        results = [
            {"role": "tool", "tool_call_id": tc.id, "content": task.run_tool(c.name, c.arguments)}
            for tc, c in zip(made, calls, strict=True)
        ]
        return calls, [*messages, turn, *results]

    async def aclose(self) -> None:
        await self._client.close()
        await self._http.aclose()
