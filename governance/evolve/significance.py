"""Is a cluster's failure rate really above the rest of its scope? Two tests, chosen by what is known.

- **Two-proportion z-test** (one-sided, pooled variance) when the scope has a comparison group of its own
  (the same tenant's other tasks, the other tenants): the standard test of two independent binomial
  rates, cheap and exact enough once each side holds a handful of trajectories.
- **Wilson score bound** when there is nothing to compare with (every trajectory of the scope is in the
  cluster): the cluster's failure rate is significant when the lower end of its Wilson interval lies
  above the rate the operator tolerates. Wilson rather than the normal (Wald) interval because it stays
  inside [0, 1] and keeps its coverage at small n and at rates near 0 or 1, which is where clusters live.

Many candidate clusters are tested in one diagnosis, so ``holm`` adjusts their p-values
(Holm-Bonferroni: controls the family-wise error without Bonferroni's loss of power).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict


def _normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _z_quantile(p: float) -> float:
    """z with P(Z > z) = p (bisection on the survival function; p in (0, 1))."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if _normal_sf(mid) > p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def wilson_interval(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided (1 - alpha) Wilson score interval of a rate k/n; (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    z = _z_quantile(alpha / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class SignificanceResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    test: str
    statistic: float
    p_value: float


def two_proportion_z(k1: int, n1: int, k2: int, n2: int) -> SignificanceResult:
    """One-sided test that rate k1/n1 exceeds k2/n2 (pooled standard error)."""
    if n1 <= 0 or n2 <= 0:
        raise ValueError("both groups need at least one trajectory")
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0.0:  # both groups all-fail or all-pass: no evidence of a difference
        return SignificanceResult(test="two_proportion_z", statistic=0.0, p_value=1.0)
    z = (p1 - p2) / se
    return SignificanceResult(test="two_proportion_z", statistic=z, p_value=_normal_sf(z))


def wilson_vs_tolerance(k: int, n: int, tolerated: float, alpha: float) -> SignificanceResult:
    """One-sided: is the rate k/n above ``tolerated``? The statistic is the one-sided Wilson lower bound
    at level alpha; the p-value is that of the score test the Wilson interval inverts."""
    if n <= 0:
        return SignificanceResult(test="wilson_vs_tolerance", statistic=0.0, p_value=1.0)
    low, _ = wilson_interval(k, n, 2 * alpha)
    p0 = min(max(tolerated, 1e-9), 1 - 1e-9)
    score = (k / n - p0) / math.sqrt(p0 * (1 - p0) / n)
    return SignificanceResult(test="wilson_vs_tolerance", statistic=low, p_value=_normal_sf(score))


def holm(p_values: list[float], alpha: float) -> list[bool]:
    """Which hypotheses Holm-Bonferroni rejects at family-wise level alpha (same order as given)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    m = len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected
