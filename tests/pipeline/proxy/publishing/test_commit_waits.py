"""The log-wait buckets: quantiles within a bucket's 25 %, and snapshots that subtract into one run."""

from __future__ import annotations

from pipeline.proxy.publishing.commit_waits import CommitWaits, wait_quantile_ms


def test_quantiles_of_a_run_are_within_one_bucket() -> None:
    waits = CommitWaits()
    for _ in range(1000):
        waits.observe(0.5)  # a slow earlier run
    before = waits.snapshot()
    for i in range(1000):
        waits.observe(20e-6 if i < 985 else 3e-3)  # this run: 1.5 % of the waits took 3 ms
    run = [a - b for a, b in zip(waits.snapshot(), before, strict=True)]
    assert sum(run) == 1000
    p50, p99 = wait_quantile_ms(run, 0.5), wait_quantile_ms(run, 0.99)
    assert 0.02 <= p50 <= 0.025
    assert 3.0 <= p99 <= 3.75
    assert wait_quantile_ms([0] * len(run), 0.99) is None
