"""A weighted combination: sum(w_i * r_i) / sum(w_i) over the parts that apply to the sample.

A part that raises fails the whole combination (the caller records it): a silent zero would quietly bias
the mix. None when no part applies.
"""

from __future__ import annotations

from trainers.rewards.base import RewardContext, RewardFunction


class WeightedReward(RewardFunction):
    name = "weighted"

    def __init__(self, parts: list[tuple[float, RewardFunction]]) -> None:
        self.parts = parts

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        total = weight = 0.0
        for w, fn in self.parts:
            value = fn.score(completion, ctx)
            if value is None or w == 0:
                continue
            total += w * value
            weight += w
        return total / weight if weight > 0 else None
