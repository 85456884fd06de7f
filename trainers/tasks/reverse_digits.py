"""Toy verifiable task: "reverse 123" -> "321". The reference is derived from the prompt itself, so any
trajectory of this task can be graded (by the trainer or a replay check) without stored answers.
"""

from __future__ import annotations

import random
import re
from typing import Any

from sluice.events import Trajectory
from trainers.rewards.base import RewardFunction
from trainers.tasks.base import Task, last_user_text

_PROMPT = re.compile(r"reverse\s+(\d+)\s*$")


class ReverseDigitsTask(Task):
    name = "reverse_digits"

    def __init__(
        self, reward: RewardFunction, min_digits: int = 1, max_digits: int = 3, timeout_s: float = 10.0
    ) -> None:
        super().__init__(reward, timeout_s)
        self.min_digits, self.max_digits = min_digits, max_digits

    def reference(self, messages: list[dict[str, Any]], trajectory: Trajectory | None = None) -> str | None:
        found = _PROMPT.search(last_user_text(messages).strip())
        return found.group(1)[::-1] if found else None

    def make_prompt(self, rng: random.Random) -> tuple[list[dict[str, Any]], str]:
        digits = "".join(
            rng.choice("0123456789") for _ in range(rng.randint(self.min_digits, self.max_digits))
        )
        return [{"role": "user", "content": f"reverse {digits}"}], digits[::-1]
