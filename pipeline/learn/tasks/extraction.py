"""Formatted extraction: pull one field out of a short record and reply as ``FIELD=value``.

The checker accepts the reply only when it opens with exactly that key and the right value, so both reading
the record and keeping to the format count.
"""

from __future__ import annotations

import random
import re

from pipeline.learn.tasks.base import Problem, VerifiableTask

CITIES = ("Berlin", "Lisbon", "Osaka", "Denver", "Nairobi", "Oslo", "Lima", "Perth")


class ExtractionTask(VerifiableTask):
    name = "extraction"
    max_tokens = 10

    def draw(self, rng: random.Random) -> Problem:
        order = rng.randint(10000, 99999)
        city = rng.choice(CITIES)
        day = rng.randint(1, 28)
        record = f"Order {order} shipped to {city} on March {day}."
        prompt = f"{record}\nWhat is the order number? Reply exactly as ORDER=<number>."
        return Problem(task=self.name, messages=[{"role": "user", "content": prompt}], answer=f"ORDER={order}")

    def grade(self, problem: Problem, reply: str) -> float:
        got = re.match(r"\s*ORDER\s*=\s*(\d+)", reply)
        return 1.0 if got is not None and f"ORDER={got.group(1)}" == problem.answer else 0.0
