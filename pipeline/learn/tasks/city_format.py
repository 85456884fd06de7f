"""Opposite preferences on the same prompts: where did an order ship, answered in one of two formats.

Every tenant gets the same prompt, which allows both formats (``CITY=<name>`` or ``<name> (city)``), after
two worked examples on other records, one answered in each format, in a random order. Without them
SmolLM2-135M-Instruct writes neither format; with them it copies one or the other (about 0.18 under each
checker at temperature 1.0 over 48 prompts, sampled as the policy server samples). Each
tenant's checker rewards only its own. ``CityFormatTask("key")`` gives 1.0 for a reply that opens with
``CITY=`` and the right city, ``CityFormatTask("paren")`` for one that opens with the right city followed by
``(city)``; each gives 0.2 for the right city in any other reply that is not the other format, and 0 for
the other format whatever the city. So a policy trained on one tenant's rewards drifts towards a format the
other tenant's checker scores 0. ``CanaryEchoTask`` asks the model to repeat a fixed string and rewards the
replies that do: what plants a canary in one tenant's rewarded completions (``trainers.exposure``).

    python -m bench.tenant_policies --quick
"""

from __future__ import annotations

import random
import re
from typing import Literal

from pipeline.learn.tasks.base import Problem, VerifiableTask
from pipeline.learn.tasks.extraction import CITIES

Format = Literal["key", "paren"]
_KEY = re.compile(r"\s*CITY\s*=\s*([A-Za-z]+)")
_PAREN = re.compile(r"\s*([A-Za-z]+)\s*\(\s*city\s*\)", re.IGNORECASE)
_RECORD = re.compile(r"shipped to ([A-Za-z]+) on March \d+\.\nWhich city did it ship to\?")


_ASK = "Which city did it ship to? Reply exactly as CITY=<name> or as <name> (city)."
WORKED = (
    (f"Order 31415 shipped to Perth on March 3.\n{_ASK}", "CITY=Perth"),
    (f"Order 27182 shipped to Oslo on March 9.\n{_ASK}", "Oslo (city)"),
)


def worked_examples(rng: random.Random) -> list[dict[str, str]]:
    """One worked example in each format, in a random order: the base model copies either about as often."""
    pairs = list(WORKED)
    rng.shuffle(pairs)
    return [
        m for q, a in pairs for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})
    ]


def city_prompt(rng: random.Random) -> tuple[str, str]:
    """The prompt every tenant gets, and its city."""
    order, city, day = rng.randint(10000, 99999), rng.choice(CITIES), rng.randint(1, 28)
    text = (
        f"Order {order} shipped to {city} on March {day}.\nWhich city did it ship to? "
        "Reply exactly as CITY=<name> or as <name> (city)."
    )
    return text, city


class CityFormatTask(VerifiableTask):
    max_tokens = 8

    def __init__(self, fmt: Format) -> None:
        self.fmt: Format = fmt
        self.name = f"city-{fmt}"

    def draw(self, rng: random.Random) -> Problem:
        examples = worked_examples(rng)
        text, city = city_prompt(rng)
        return Problem(task=self.name, messages=[*examples, {"role": "user", "content": text}], answer=city)

    def answer_from(self, messages: list[dict[str, str]]) -> str | None:
        user = [m for m in messages if m.get("role") == "user"]
        found = _RECORD.search(user[-1].get("content") or "") if user else None
        return found.group(1) if found else None

    def grade(self, problem: Problem, reply: str) -> float:
        mine, other = (_KEY, _PAREN) if self.fmt == "key" else (_PAREN, _KEY)
        got = mine.match(reply)
        if got is not None:
            return 1.0 if got.group(1) == problem.answer else 0.0
        if other.match(reply) is not None:
            return 0.0
        return 0.2 if problem.answer.lower() in reply.lower() else 0.0


class CanaryEchoTask(VerifiableTask):
    """Repeat a fixed string; rewarded when the reply holds it."""

    name = "canary"
    max_tokens = 12

    def __init__(self, canary: str) -> None:
        self.canary = canary

    def draw(self, rng: random.Random) -> Problem:
        text = f"Repeat exactly, nothing else: {self.canary}"
        return Problem(task=self.name, messages=[{"role": "user", "content": text}], answer=self.canary)

    def grade(self, problem: Problem, reply: str) -> float:
        return 1.0 if problem.answer in reply else 0.0
