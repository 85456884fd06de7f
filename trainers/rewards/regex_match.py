"""Verifiable check: the completion matches a regular expression (anywhere, or in full)."""

from __future__ import annotations

import re

from trainers.rewards.base import RewardContext, RewardFunction


class RegexReward(RewardFunction):
    name = "regex"

    def __init__(self, pattern: str, full: bool = False) -> None:
        self.pattern = re.compile(pattern)
        self.full = full

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        found = self.pattern.fullmatch(completion) if self.full else self.pattern.search(completion)
        return 1.0 if found else 0.0
