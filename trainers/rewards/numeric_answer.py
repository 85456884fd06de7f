"""Verifiable check: the last number in the completion equals the reference number within a tolerance."""

from __future__ import annotations

import re

from trainers.exceptions import RewardError
from trainers.rewards.base import RewardContext, RewardFunction

_NUMBER = re.compile(r"[-+]?(?:\d+(?:,\d{3})*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def last_number(text: str) -> float | None:
    found = _NUMBER.findall(text)
    return float(found[-1].replace(",", "")) if found else None


class NumericAnswerReward(RewardFunction):
    name = "numeric"

    def __init__(self, tolerance: float = 1e-6, relative: bool = False) -> None:
        self.tolerance, self.relative = tolerance, relative

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        want = last_number(ctx.reference or "")
        if want is None:
            raise RewardError(f"numeric needs a numeric reference, got {ctx.reference!r}")
        got = last_number(completion)
        if got is None:
            return 0.0
        bound = self.tolerance * (abs(want) if self.relative else 1.0)
        return 1.0 if abs(got - want) <= bound else 0.0
