"""A learn task as a grader of recorded prompts: the answer read back from the prompt, its own checker."""

from __future__ import annotations

import json
import random

import pytest
from pydantic import ValidationError

from pipeline.learn.tasks import build_tasks
from trainers.config import TaskConfig
from trainers.tasks.learn_task import LearnTask
from trainers.tasks.registry import build_task


@pytest.mark.parametrize("name", ["extraction", "arithmetic", "tool_call"])
def test_the_answer_is_read_back_from_every_drawn_prompt(name: str) -> None:
    (task,) = build_tasks([name])
    rng = random.Random(3)
    for _ in range(30):
        problem = task.draw(rng)
        assert task.answer_from(problem.messages) == problem.answer
        assert task.problem_from(problem.messages) == problem
    assert task.answer_from([{"role": "user", "content": "Say yes."}]) is None


def test_extraction_grader_from_config_grades_a_recorded_prompt_like_the_checker() -> None:
    grader = build_task(TaskConfig(kind="learn", learn_task="extraction"))
    assert isinstance(grader, LearnTask) and grader.name == "extraction"
    (checker,) = build_tasks(["extraction"])
    problem = checker.draw(random.Random(0))
    # the recorded body keeps the worked example (whose record names another city) before the question
    reference = grader.reference(problem.messages)
    assert reference == problem.answer
    wrong = next(c for c in ("Berlin", "Lisbon") if c != problem.answer)
    for reply in (f"CITY={problem.answer}", f"CITY={wrong}", problem.answer, f"CITY={problem.answer} ok"):
        got = grader.grade(reply, grader.context(problem.messages, reference))
        assert not got.failed and got.value == checker.grade(problem, reply)
    assert grader.grade(f"CITY={problem.answer}", grader.context(problem.messages, reference)).value == 1.0


def test_a_prompt_without_its_answer_is_a_recorded_failure_not_a_score() -> None:
    grader = build_task(TaskConfig(kind="learn", learn_task="tool_call"))
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is the weather?"}]}]
    assert grader.reference(messages) is None
    got = grader.grade(json.dumps({"tool": "weather", "city": "Oslo"}), grader.context(messages, None))
    assert got.failed and got.value == 0.0


def test_learn_task_is_named_for_kind_learn_only_and_must_be_known() -> None:
    with pytest.raises(ValidationError, match="learn_task"):
        TaskConfig(kind="learn")
    with pytest.raises(ValidationError, match="learn_task"):
        TaskConfig(kind="traffic", learn_task="extraction")
    with pytest.raises(ValidationError, match="unknown learn_task"):
        TaskConfig(kind="learn", learn_task="chess")
