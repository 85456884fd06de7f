"""Graders of the verifiable tasks: each accepts the answers its task asks for and nothing else."""

from __future__ import annotations

import json
import random

import pytest

from pipeline.learn.tasks import TASKS, ArithmeticTask, ExtractionTask, ToolCallTask, build_tasks
from pipeline.learn.tasks.tool_call import first_json_object


def test_arithmetic_reads_only_the_first_number() -> None:
    task = ArithmeticTask()
    p = task.draw(random.Random(1))
    a, b = (int(x) for x in p.messages[-1]["content"].split("?")[0].split("is ")[1].split(" + "))
    assert p.answer == str(a + b)
    assert task.grade(p, f"{a + b}") == 1.0
    assert task.grade(p, f" {a + b}.") == 1.0
    assert task.grade(p, f"{a} + {b} = {a + b}") == 0.0  # talking first is the failure to unlearn
    assert task.grade(p, f"{a + b + 1}") == 0.0
    assert task.grade(p, "twelve") == 0.0
    assert task.grade(p, "") == 0.0


def test_extraction_needs_the_key_and_the_right_city() -> None:
    task = ExtractionTask()
    p = task.draw(random.Random(2))
    city = p.answer
    assert city in p.messages[-1]["content"]
    assert task.grade(p, f"CITY={city}") == 1.0
    assert task.grade(p, f"CITY = {city}, shipped") == 1.0
    assert task.grade(p, f"It shipped to CITY={city}") == 0.0
    assert task.grade(p, "CITY=Atlantis") == 0.0
    assert task.grade(p, city) == 0.0
    assert task.grade(p, "ORDER=31415") == 0.0


def test_tool_call_parses_the_first_json_object() -> None:
    task = ToolCallTask()
    p = task.draw(random.Random(3))
    city = json.loads(p.answer)["city"]
    assert task.grade(p, p.answer) == 1.0
    assert task.grade(p, f'Sure: {{"city": "{city}", "tool": "weather"}} done') == 1.0
    assert task.grade(p, f'{{"tool": "weather", "city": "{city}"') == 0.0  # unbalanced
    assert task.grade(p, '{"tool": "weather", "city": "Atlantis"}') == 0.0
    assert task.grade(p, f'{{"tool": "forecast", "city": "{city}"}}') == 0.0
    assert first_json_object('{bad} {"a": 1}') == {"a": 1}
    assert first_json_object("[1, 2]") is None


def test_problems_are_reproducible_and_varied() -> None:
    for task in build_tasks(sorted(TASKS)):
        a = [task.draw(random.Random(5)) for _ in range(3)]
        b = [task.draw(random.Random(5)) for _ in range(3)]
        assert a == b
        rng = random.Random(6)
        assert len({task.draw(rng).answer for _ in range(20)}) > 3
        assert all(p.task == task.name for p in a)


def test_unknown_task_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="arithmetic"):
        build_tasks(["nope"])
