"""An anytime-valid sequential test of candidate vs control on rewards in [0, 1].

Method: a time-uniform confidence sequence for each arm's mean reward from the two-sided normal-mixture
boundary of Robbins (1970), in the form of Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Annals of Statistics 49(2), 2021 (eq. 14 with a normal mixing
distribution). A reward in [0, 1] is 1/2-sub-Gaussian, so for ``n`` rewards with sum ``S`` and mean ``mu``
the mixture martingale ``sqrt(rho / (V + rho)) * exp((S - n mu)^2 / (2 (V + rho)))`` with ``V = n / 4``
is a non-negative supermartingale, and by Ville's inequality

    P(exists n: |S - n mu| >= sqrt((V + rho) * log((V + rho) / (rho * a^2)))) <= a.

Each arm gets ``a = alpha / 2``, so with probability at least ``1 - alpha`` both sequences cover their
means at every sample size at once, and the difference ``candidate - control`` lies in
``[lo_cand - hi_ctrl, hi_cand - lo_ctrl]`` at every look. Hence:

* promote when the lower bound of the difference exceeds ``min_effect`` (false promotion <= alpha, however
  often the data are looked at and whenever the looks stop);
* abort when its upper bound falls below ``min_effect`` (the candidate cannot be as good as asked; below 0
  it is worse than control), or when ``max_per_arm`` rewards per arm gave no decision;
* continue otherwise.

At the cap, ``final_non_inferiority`` (a margin, off by default) turns an inconclusive canary into a
non-inferiority decision instead of an abort: one planned fixed-sample look, a one-sided normal bound at
level ``alpha`` on the difference, with each arm's variance bounded by ``mean * (1 - mean)`` (the largest a
variable in [0, 1] with that mean can have). The candidate is promoted when that bound is above
``-margin`` and the observed difference is not negative. This is for trained policy versions: the newer one
has seen more data, and serving it keeps the trainer's rows close to the policy that produced them; the
chance of promoting one worse than control by more than the margin is at most ``alpha`` on top of the
sequential part's.

Only the counts and sums per arm are needed: the canary gate aggregates them from the steps each arm
served since the canary started, joined to their trajectories' latest rewards
(``pipeline.evolve.gates.canary``), and the test is the same whether it is asked after every reward or
once an hour.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sluice.frozen import Frozen

SequentialDecision = Literal["promote", "continue", "abort"]

SUB_GAUSSIAN_VARIANCE = 0.25  # a variable in [0, 1] is sub-Gaussian with variance proxy 1/4


class SequentialConfig(Frozen):
    alpha: float = Field(0.05, gt=0, lt=1, description="Error rate of a promotion (and of an abort).")
    min_effect: float = Field(
        0.0, ge=-1, le=1, description="Promote only when candidate - control is surely above this."
    )
    tune_n: int = Field(
        100, ge=1, description="Rewards per arm at which the boundary is tightest (sets the mixture rho)."
    )
    min_per_arm: int = Field(10, ge=1, description="No decision before each arm has this many rewards.")
    max_per_arm: int = Field(
        5000, ge=1, description="Abort as inconclusive once both arms have this many rewards."
    )
    final_non_inferiority: float | None = Field(
        None,
        ge=0,
        le=1,
        description="At max_per_arm, promote instead of aborting when a one-sided bound puts candidate - "
        "control above minus this margin and the observed difference is not negative (None: abort).",
    )


class ArmStats(BaseModel):
    """Rewards seen on one arm, clipped to [0, 1]: how many and their sum."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(0, ge=0)
    total: float = Field(0.0, ge=0)

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @classmethod
    def of(cls, rewards: list[float]) -> ArmStats:
        return cls(n=len(rewards), total=sum(min(1.0, max(0.0, r)) for r in rewards))


class SequentialResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: SequentialDecision
    reason: str
    control: ArmStats
    candidate: ArmStats
    difference: float | None = Field(None, description="Candidate mean minus control mean.")
    lower: float | None = Field(None, description="Anytime-valid lower bound of the difference.")
    upper: float | None = Field(None, description="Anytime-valid upper bound of the difference.")
    alpha: float
    min_effect: float


def radius(n: int, alpha_arm: float, rho: float) -> float:
    """Half-width of one arm's confidence sequence for its mean after ``n`` rewards (inf for n = 0)."""
    if n <= 0:
        return math.inf
    v = SUB_GAUSSIAN_VARIANCE * n
    return math.sqrt((v + rho) * math.log((v + rho) / (rho * alpha_arm**2))) / n


def arm_interval(stats: ArmStats, alpha_arm: float, rho: float) -> tuple[float, float]:
    """Confidence sequence for one arm's mean, cut to [0, 1]."""
    if stats.n == 0:
        return 0.0, 1.0
    mean, r = stats.total / stats.n, radius(stats.n, alpha_arm, rho)
    return max(0.0, mean - r), min(1.0, mean + r)


def final_lower_bound(control: ArmStats, candidate: ArmStats, alpha: float) -> float:
    """One-sided (1 - alpha) lower bound of candidate - control from one fixed-sample look, each arm's
    variance bounded by ``mean * (1 - mean)``; -1 when an arm is empty."""
    if not control.n or not candidate.n:
        return -1.0
    c, k = candidate.total / candidate.n, control.total / control.n
    se = math.sqrt(c * (1 - c) / candidate.n + k * (1 - k) / control.n)
    return c - k - NormalDist().inv_cdf(1 - alpha) * se


def sequential_test(control: ArmStats, candidate: ArmStats, cfg: SequentialConfig) -> SequentialResult:
    """Promote, continue or abort on the rewards seen so far (valid at any look)."""
    rho = SUB_GAUSSIAN_VARIANCE * cfg.tune_n
    alpha_arm = cfg.alpha / 2
    c_lo, c_hi = arm_interval(candidate, alpha_arm, rho)
    k_lo, k_hi = arm_interval(control, alpha_arm, rho)
    lower, upper = c_lo - k_hi, c_hi - k_lo
    diff = candidate.mean - control.mean if candidate.mean is not None and control.mean is not None else None

    def result(decision: SequentialDecision, reason: str) -> SequentialResult:
        return SequentialResult(
            decision=decision,
            reason=reason,
            control=control,
            candidate=candidate,
            difference=diff,
            lower=round(lower, 6),
            upper=round(upper, 6),
            alpha=cfg.alpha,
            min_effect=cfg.min_effect,
        )

    if min(control.n, candidate.n) < cfg.min_per_arm:
        return result("continue", f"fewer than {cfg.min_per_arm} rewards on an arm")
    if lower > cfg.min_effect:
        return result("promote", f"candidate beats control: difference >= {lower:.3f} > {cfg.min_effect}")
    if upper < min(0.0, cfg.min_effect):
        return result("abort", f"candidate loses to control: difference <= {upper:.3f} < 0")
    if upper < cfg.min_effect:
        return result("abort", f"candidate cannot gain {cfg.min_effect}: difference <= {upper:.3f}")
    if min(control.n, candidate.n) >= cfg.max_per_arm:
        margin = cfg.final_non_inferiority
        bound = final_lower_bound(control, candidate, cfg.alpha)
        if margin is not None and diff is not None and diff >= 0 and bound > -margin:
            return result(
                "promote",
                f"not worse than control after {cfg.max_per_arm} rewards per arm: difference {diff:+.3f}, "
                f"one-sided bound {bound:.3f} > -{margin}",
            )
        return result("abort", f"no decision after {cfg.max_per_arm} rewards per arm")
    return result("continue", f"difference in [{lower:.3f}, {upper:.3f}]")
