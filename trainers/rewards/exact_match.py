"""Verifiable check: the completion equals the reference answer."""

from __future__ import annotations

from trainers.exceptions import RewardError
from trainers.rewards.base import RewardContext, RewardFunction


class ExactMatchReward(RewardFunction):
    name = "exact_match"

    def __init__(self, strip: bool = True, case_sensitive: bool = True) -> None:
        self.strip, self.case_sensitive = strip, case_sensitive

    def _norm(self, s: str) -> str:
        s = s.strip() if self.strip else s
        return s if self.case_sensitive else s.casefold()

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        if ctx.reference is None:
            raise RewardError("exact_match needs a reference answer and the task has none")
        return 1.0 if self._norm(completion) == self._norm(ctx.reference) else 0.0
