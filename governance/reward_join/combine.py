"""Combining several rewards into one number, per ``RewardJoinConfig.combine``.

last: the latest by creation time (arrival order breaks ties); mean; sum; weighted: mean weighted by
``source_weights[reward.source]`` — sources without a weight are left out, and no weighted reward at all
gives None rather than a silent zero. Rewards without a value (critiques) never count.

The trajectory reward combines the trajectory-level rewards (``step_index`` None); only when there are
none does it combine the step-level ones (feedback on steps included).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from governance.config import RewardJoinConfig
from governance.reward_join.feedback import reward_value
from sluice.events import Reward

Valued = list[tuple[Reward, float]]


def _last(valued: Valued, cfg: RewardJoinConfig) -> float | None:
    order = {id(r): i for i, (r, _) in enumerate(valued)}
    return max(valued, key=lambda rv: (rv[0].created_at, order[id(rv[0])]))[1]


def _mean(valued: Valued, cfg: RewardJoinConfig) -> float | None:
    return sum(v for _, v in valued) / len(valued)


def _sum(valued: Valued, cfg: RewardJoinConfig) -> float | None:
    return float(sum(v for _, v in valued))


def _weighted(valued: Valued, cfg: RewardJoinConfig) -> float | None:
    pairs = [(cfg.source_weights[r.source], v) for r, v in valued if r.source in cfg.source_weights]
    total = sum(w for w, _ in pairs)
    if not pairs or total == 0:
        return None
    return sum(w * v for w, v in pairs) / total


COMBINERS: dict[str, Callable[[Valued, RewardJoinConfig], float | None]] = {
    "last": _last,
    "mean": _mean,
    "sum": _sum,
    "weighted": _weighted,
}


def combine_rewards(rewards: Sequence[Reward], cfg: RewardJoinConfig) -> float | None:
    """One number from ``rewards`` (None when none carries a value)."""
    valued = [(r, v) for r in rewards if (v := reward_value(r, cfg)) is not None]
    if not valued:
        return None
    return COMBINERS[cfg.combine](valued, cfg)


def trajectory_reward(
    trajectory_level: Sequence[Reward], step_level: Sequence[Reward], cfg: RewardJoinConfig
) -> float | None:
    value = combine_rewards(trajectory_level, cfg)
    return value if value is not None else combine_rewards(step_level, cfg)
