"""Staleness in policy versions, checked when a batch is about to train."""

from __future__ import annotations

from testing.live_steps import step, trajectory
from trainers.live.extract import extract_samples
from trainers.live.samples import LiveRow
from trainers.live.staleness import apply_staleness
from trainers.tiny_model import build_tokenizer

TOK = build_tokenizer()


def row(version: str | None, tid: str) -> LiveRow:
    traj = trajectory([step(0, [1], [2], version=version)], tid=tid)
    return LiveRow(sample=extract_samples(traj, TOK, ["*"], 100).samples[0], advantage=1.0)


def test_within_the_bound_rows_keep_weight_one_beyond_it_they_are_dropped() -> None:
    rows = [row("5", "a"), row("3", "b"), row("2", "c"), row("tiny-1", "d"), row("7", "e")]
    kept, counts, lags = apply_staleness(rows, learner_version=5, max_staleness=2, policy="drop", decay=0.5)
    assert [r.sample.trajectory_id for r in kept] == ["a", "b", "e"]
    assert all(r.weight == 1.0 for r in kept)
    assert counts == {"dropped_stale": 1, "unknown_version": 1}
    assert lags == [0, 2, 3, 0]  # a version ahead of the learner counts as 0


def test_downweight_decays_per_version_beyond_the_bound_and_unknown_versions_still_drop() -> None:
    rows = [row("2", "a"), row("0", "b"), row(None, "c")]
    kept, counts, _ = apply_staleness(
        rows, learner_version=4, max_staleness=1, policy="downweight", decay=0.5
    )
    assert [(r.sample.trajectory_id, r.weight) for r in kept] == [("a", 0.5), ("b", 0.125)]
    assert counts == {"downweighted": 2, "unknown_version": 1}


def test_a_reward_days_late_is_used_while_its_steps_are_within_the_bound() -> None:
    late = row("9", "late")  # served by v9; the reward came much later, the learner is at v10
    kept, _, _ = apply_staleness([late], learner_version=10, max_staleness=1, policy="drop", decay=0.5)
    assert len(kept) == 1
    kept, counts, _ = apply_staleness([late], learner_version=11, max_staleness=1, policy="drop", decay=0.5)
    assert kept == [] and counts["dropped_stale"] == 1
