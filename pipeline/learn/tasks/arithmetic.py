"""Arithmetic with a strict answer format: the reply must open with the right number.

The instruct model usually knows a sum of small numbers but tends to talk first ("Sure! 3 + 4 = 7"),
so the checker reads only the first number of the reply. The agent shows one worked example first; the
instruct model then keeps to the format but often gets the sum wrong (about 0.1 at temperature 1.0 for
one-digit numbers, ``bench.task_probe``).
"""

from __future__ import annotations

import random
import re

from pipeline.learn.tasks.base import Problem, VerifiableTask

_FIRST_NUMBER = re.compile(r"-?\d+")
_SUM = re.compile(r"What is (\d+) \+ (\d+)\? Reply with the number only\.")


class ArithmeticTask(VerifiableTask):
    name = "arithmetic"
    max_tokens = 6

    def __init__(self, low: int = 2, high: int = 9) -> None:
        self.low, self.high = low, high

    def draw(self, rng: random.Random) -> Problem:
        a, b = rng.randint(self.low, self.high), rng.randint(self.low, self.high)
        prompt = f"What is {a} + {b}? Reply with the number only."
        example = [
            {"role": "user", "content": "What is 3 + 5? Reply with the number only."},
            {"role": "assistant", "content": "8"},
        ]
        messages = [*example, {"role": "user", "content": prompt}]
        return Problem(task=self.name, messages=messages, answer=str(a + b))

    def answer_from(self, messages: list[dict[str, str]]) -> str | None:
        """The sum asked in the last user message."""
        user = [m for m in messages if m.get("role") == "user"]
        found = _SUM.fullmatch((user[-1].get("content") or "").strip()) if user else None
        return str(int(found.group(1)) + int(found.group(2))) if found else None

    def grade(self, problem: Problem, reply: str) -> float:
        found = _FIRST_NUMBER.search(reply)
        return 1.0 if found is not None and found.group() == problem.answer else 0.0
