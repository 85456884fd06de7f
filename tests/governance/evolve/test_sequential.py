"""The sequential test keeps its error rates under continuous looks, on simulated Bernoulli streams."""

from __future__ import annotations

import random

import pytest

from governance.evolve.sequential import (
    ArmStats,
    SequentialConfig,
    final_lower_bound,
    radius,
    sequential_test,
)

CFG = SequentialConfig(alpha=0.05, min_effect=0.0, tune_n=100, min_per_arm=10, max_per_arm=1500)


def run_stream(
    p_control: float, p_candidate: float, rng: random.Random, look_every: int = 10
) -> tuple[str, int]:
    """Feed both arms one Bernoulli reward at a time, looking every ``look_every``: the first decision."""
    c = k = 0
    n = 0
    while True:
        for _ in range(look_every):
            k += rng.random() < p_control
            c += rng.random() < p_candidate
        n += look_every
        got = sequential_test(ArmStats(n=n, total=k), ArmStats(n=n, total=c), CFG)
        if got.decision != "continue":
            return got.decision, n


def test_no_difference_false_promotions_stay_below_alpha() -> None:
    rng = random.Random(7)
    runs = 400
    outcomes = [run_stream(0.5, 0.5, rng)[0] for _ in range(runs)]
    false_promote = outcomes.count("promote") / runs
    # Looking every 10 rewards up to 1500 per arm: a fixed-sample test would exceed alpha many times over.
    assert false_promote <= CFG.alpha
    assert outcomes.count("abort") >= runs * 0.9  # almost all end at the cap, inconclusive


def test_no_difference_at_a_low_base_rate_also_holds() -> None:
    rng = random.Random(11)
    runs = 300
    promoted = sum(run_stream(0.1, 0.1, rng)[0] == "promote" for _ in range(runs))
    assert promoted / runs <= CFG.alpha


def test_a_real_gain_promotes() -> None:
    rng = random.Random(3)
    results = [run_stream(0.3, 0.6, rng) for _ in range(60)]
    decisions = [d for d, _ in results]
    assert decisions.count("promote") >= 57
    sizes = sorted(n for d, n in results if d == "promote")
    assert sizes[len(sizes) // 2] < 400  # a 0.3 gain is seen within a few hundred rewards per arm


def test_a_real_loss_aborts_and_never_promotes() -> None:
    rng = random.Random(5)
    results = [run_stream(0.6, 0.3, rng)[0] for _ in range(60)]
    assert results.count("promote") == 0
    assert results.count("abort") == 60


def test_min_effect_needs_more_than_a_small_gain() -> None:
    cfg = CFG.model_copy(update={"min_effect": 0.2})
    rng = random.Random(9)
    n = 2000
    k = sum(rng.random() < 0.5 for _ in range(n))
    c = sum(rng.random() < 0.55 for _ in range(n))
    got = sequential_test(ArmStats(n=n, total=k), ArmStats(n=n, total=c), cfg)
    assert got.decision == "abort" and "cannot gain" in got.reason
    assert got.lower is not None and got.upper is not None and got.lower < got.difference < got.upper


def test_too_few_rewards_continue() -> None:
    got = sequential_test(ArmStats(n=3, total=0), ArmStats(n=3, total=3), CFG)
    assert got.decision == "continue"


def test_the_boundary_shrinks_and_is_wider_for_smaller_alpha() -> None:
    rho = 25.0
    assert radius(100, 0.025, rho) > radius(1000, 0.025, rho) > radius(10000, 0.025, rho)
    assert radius(100, 0.005, rho) > radius(100, 0.025, rho)
    assert radius(0, 0.025, rho) == float("inf")


def test_rewards_are_clipped_into_the_unit_interval() -> None:
    stats = ArmStats.of([1.5, -0.2, 0.5])
    assert stats.n == 3 and stats.total == pytest.approx(1.5)


def test_a_final_look_promotes_a_candidate_not_worse_than_control_within_the_margin() -> None:
    cfg = SequentialConfig(alpha=0.2, tune_n=40, min_per_arm=15, max_per_arm=60, final_non_inferiority=0.05)
    control, better = ArmStats(n=60, total=55.0), ArmStats(n=60, total=57.0)  # 0.917 vs 0.95: inconclusive
    assert sequential_test(
        control, better, cfg.model_copy(update={"final_non_inferiority": None})
    ).decision == ("abort")
    got = sequential_test(control, better, cfg)
    assert got.decision == "promote" and "not worse than control" in got.reason
    worse = ArmStats(n=60, total=53.0)  # observed below control: never promoted on the final look
    assert sequential_test(control, worse, cfg).decision == "abort"
    noisy = sequential_test(ArmStats(n=60, total=30.0), ArmStats(n=60, total=30.0), cfg)  # 0.5 vs 0.5
    assert noisy.decision == "abort"  # the bound (-0.075) is below -0.05: not shown non-inferior
    early = sequential_test(control, better.model_copy(update={"n": 59, "total": 56.0}), cfg)
    assert early.decision == "continue"  # the final look is only at the cap


def test_the_final_bound_matches_the_normal_approximation() -> None:
    bound = final_lower_bound(ArmStats(n=100, total=50.0), ArmStats(n=100, total=60.0), 0.05)
    se = (0.6 * 0.4 / 100 + 0.5 * 0.5 / 100) ** 0.5
    assert abs(bound - (0.1 - 1.6448536 * se)) < 1e-6
