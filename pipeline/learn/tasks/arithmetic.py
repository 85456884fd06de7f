"""Arithmetic with a strict answer format: the reply must open with the right number.

The instruct model usually knows a sum of small numbers but tends to talk first ("Sure! 3 + 4 = 7"),
so the checker reads only the first number of the reply: the format is what there is to learn.
"""

from __future__ import annotations

import random
import re

from pipeline.learn.tasks.base import Problem, VerifiableTask

_FIRST_NUMBER = re.compile(r"-?\d+")


class ArithmeticTask(VerifiableTask):
    name = "arithmetic"
    max_tokens = 6

    def __init__(self, low: int = 2, high: int = 20) -> None:
        self.low, self.high = low, high

    def draw(self, rng: random.Random) -> Problem:
        a, b = rng.randint(self.low, self.high), rng.randint(self.low, self.high)
        prompt = f"What is {a} + {b}? Reply with the number only."
        return Problem(task=self.name, messages=[{"role": "user", "content": prompt}], answer=str(a + b))

    def grade(self, problem: Problem, reply: str) -> float:
        found = _FIRST_NUMBER.search(reply)
        return 1.0 if found is not None and found.group() == problem.answer else 0.0
