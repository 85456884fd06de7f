"""The reward logged with the traffic (Trajectory.reward): applies to the logged sample only.

A fresh rollout is a different completion, so the logged reward says nothing about it: ``score`` returns
None there and a weighted combination renormalises over the parts that apply.
"""

from __future__ import annotations

from trainers.rewards.base import RewardContext, RewardFunction


class LoggedReward(RewardFunction):
    name = "logged"

    def score(self, completion: str, ctx: RewardContext) -> float | None:
        if not ctx.is_logged:
            return None
        return ctx.logged_reward
