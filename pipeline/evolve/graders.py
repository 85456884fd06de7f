"""The task's grader for a recorded prompt: the trainer's task plug point, configured per task id.

``evolve.graders`` maps a task id (the agent's ``x-sluice-task-id``) to a ``TaskConfig`` (its reward spec
and where the reference answer is recorded); ``*`` covers tasks not named. The shadow evaluation and the
offline regression grade both arms' answers with the same grader the trainer uses.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.evolve.evidence import RecordedPrompt
from pipeline.evolve.loop_config import EvolveConfig
from trainers.tasks.base import Task
from trainers.tasks.registry import build_task

GraderChoice = Task | Callable[[RecordedPrompt], Task]
"""One task grades every prompt (a scope's), or each prompt is graded by its own task's (a pooled policy)."""


class NoGrader(LookupError):
    """No grader is configured for the task."""


def grader_for(cfg: EvolveConfig, task_id: str | None) -> Task:
    spec = cfg.graders.get(task_id or "*") or cfg.graders.get("*")
    if spec is None:
        raise NoGrader(f"no grader for task {task_id!r}: set evolve.graders.{task_id or '*'}")
    return build_task(spec)


def grade(task: Task, prompt: RecordedPrompt, reply: str) -> float:
    """The grader's score of ``reply`` to the recorded prompt; a grader failure scores 0."""
    messages = prompt.body["messages"]
    reference = task.reference(messages, prompt.trajectory)
    outcome = task.grade(reply, task.context(messages, reference))
    return 0.0 if outcome.failed else float(outcome.value)


def task_of(grader: GraderChoice, prompt: RecordedPrompt) -> Task:
    return grader if isinstance(grader, Task) else grader(prompt)


def per_task_grader(cfg: EvolveConfig) -> Callable[[RecordedPrompt], Task]:
    """Each prompt's grader from the task id its trajectory recorded (built once per task)."""
    built: dict[str | None, Task] = {}

    def pick(prompt: RecordedPrompt) -> Task:
        task = next(
            (s.metadata.task_id for s in reversed(prompt.trajectory.steps) if s.metadata.task_id), None
        )
        if task not in built:
            built[task] = grader_for(cfg, task)
        return built[task]

    return pick
