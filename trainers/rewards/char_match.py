"""Verifiable check with partial credit: the fraction of reference positions the completion gets right.

Extra or missing characters count against it: score = matches / max(len(reference), len(completion)).
Gives a dense signal on toy tasks (digit reversal) where exact match is almost always 0 at the start.
"""

from __future__ import annotations

from trainers.exceptions import RewardError
from trainers.rewards.base import RewardContext, RewardFunction


class CharMatchReward(RewardFunction):
    name = "char_match"

    def __init__(self, strip: bool = True) -> None:
        self.strip = strip

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        if ctx.reference is None:
            raise RewardError("char_match needs a reference answer and the task has none")
        got, want = completion, ctx.reference
        if self.strip:
            got, want = got.strip(), want.strip()
        longest = max(len(got), len(want))
        if longest == 0:
            return 1.0
        return sum(a == b for a, b in zip(got, want, strict=False)) / longest
