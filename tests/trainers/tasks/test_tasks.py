"""Tasks own their graders: the reference comes from the task, grading never raises."""

from __future__ import annotations

import random

from sluice.events import StepEvent, Trajectory
from trainers.config import TaskConfig
from trainers.tasks.registry import build_task
from trainers.tasks.reverse_digits import ReverseDigitsTask
from trainers.tasks.traffic import TrafficTask


def test_reverse_digits_reference_and_prompts() -> None:
    task = build_task(TaskConfig(kind="reverse_digits", min_digits=2, max_digits=4))
    assert isinstance(task, ReverseDigitsTask)
    assert task.reference([{"role": "user", "content": "reverse 1234"}]) == "4321"
    assert task.reference([{"role": "user", "content": "hello"}]) is None
    msgs, ref = task.make_prompt(random.Random(1))
    assert 2 <= len(ref) <= 4 and task.reference(msgs) == ref
    assert task.grade(ref, task.context(msgs, ref)).value == 1.0


def test_traffic_reference_from_hidden_state() -> None:
    task = build_task(TaskConfig(kind="traffic", reference_key="answer"))
    assert isinstance(task, TrafficTask)
    steps = [
        StepEvent(trajectory_id="t", tenant="a", step_index=0, hidden_state={"answer": 42}),
        StepEvent(trajectory_id="t", tenant="a", step_index=1, hidden_state="opaque"),
    ]
    assert task.reference([], Trajectory(trajectory_id="t", tenant="a", steps=steps)) == "42"
    assert task.reference([], None) is None


def test_grading_without_reference_is_a_recorded_failure() -> None:
    task = build_task(TaskConfig(kind="traffic"))  # exact_match by default, and no reference here
    out = task.grade("anything", task.context([{"role": "user", "content": "q"}], None))
    assert out.failed and out.value == 0.0 and "reference" in out.error
