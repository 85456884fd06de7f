"""Group-normalised advantages and the staleness bound.

A_i = (r_i - mean(r)) / (std(r) + eps) over the group (the logged traffic sample included when it joined),
or without the division when ``scale`` is off (Dr. GRPO). A group whose rewards are all equal carries no
signal and gets all-zero advantages; the learner leaves it out of the batch.
"""

from __future__ import annotations

import math
from typing import Literal


def group_advantages(rewards: list[float], scale: bool = True, eps: float = 1e-6) -> list[float]:
    n = len(rewards)
    if n == 0:
        return []
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / n)  # population std, as in the GRPO paper's code
    if std < eps:
        return [0.0] * n
    return [(r - mean) / (std + eps) if scale else r - mean for r in rewards]


def staleness_weight(
    lag: int, max_staleness: int, policy: Literal["drop", "downweight"], decay: float = 0.5
) -> float | None:
    """Weight of a sample ``lag`` policy versions behind the learner; None means drop it."""
    if lag <= max_staleness:
        return 1.0
    if policy == "drop":
        return None
    return decay ** (lag - max_staleness)
