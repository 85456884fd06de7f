"""Formatted extraction: pull one field out of a short record and reply as ``CITY=name``.

The agent shows one worked example first (the order number of another record, answered as
``ORDER=31415``), then asks for the city of a new record. The checker accepts the reply only when it opens
with ``CITY=`` and the right city, so reading the record and carrying the format over to a new key both
count. SmolLM2-135M-Instruct gets about half of these right at temperature 1.0 (``bench.task_probe``).
"""

from __future__ import annotations

import random
import re

from pipeline.learn.tasks.base import Problem, VerifiableTask

CITIES = ("Berlin", "Lisbon", "Osaka", "Denver", "Nairobi", "Oslo", "Lima", "Perth", "Quito", "Hanoi")
EXAMPLE = [
    {
        "role": "user",
        "content": "Order 31415 shipped to Perth on March 3.\nWhat is the order number? "
        "Reply exactly as ORDER=<number>.",
    },
    {"role": "assistant", "content": "ORDER=31415"},
]


_RECORD = re.compile(r"shipped to ([A-Za-z]+) on March \d+\.\nWhich city did it ship to\?")


class ExtractionTask(VerifiableTask):
    name = "extraction"
    max_tokens = 8

    def draw(self, rng: random.Random) -> Problem:
        order, city, day = rng.randint(10000, 99999), rng.choice(CITIES), rng.randint(1, 28)
        prompt = (
            f"Order {order} shipped to {city} on March {day}.\nWhich city did it ship to? "
            "Reply exactly as CITY=<name>."
        )
        return Problem(task=self.name, messages=[*EXAMPLE, {"role": "user", "content": prompt}], answer=city)

    def answer_from(self, messages: list[dict[str, str]]) -> str | None:
        """The city of the record in the last user message (the worked example's record is not asked)."""
        user = [m for m in messages if m.get("role") == "user"]
        found = _RECORD.search(user[-1].get("content") or "") if user else None
        return found.group(1) if found else None

    def grade(self, problem: Problem, reply: str) -> float:
        got = re.match(r"\s*CITY\s*=\s*([A-Za-z]+)", reply)
        return 1.0 if got is not None and got.group(1) == problem.answer else 0.0
