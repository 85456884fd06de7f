"""Learner and rollout worker in one process (no Ray): updates, weight sync, KL, staleness handling."""

from __future__ import annotations

import pytest

from sluice.config import parse_config
from trainers.actors.learner import Learner
from trainers.actors.rollout_worker import RolloutWorker
from trainers.config import TaskConfig
from trainers.task_builder import build_training_task
from trainers.tasks.registry import build_task
from trainers.tiny_model import build_tokenizer
from trainers.toy_traffic import make_trajectories
from trainers.weight_sync.in_process import InProcessWeightSync

TASK = {"kind": "reverse_digits", "max_digits": 1, "reward": {"kind": "exact_match"}}


def setup(**trainer: object) -> tuple[Learner, RolloutWorker, list]:
    cfg = parse_config(
        {"trainer": {"task": TASK, "group_size": 4, "tasks_per_step": 4, "max_new_tokens": 3, **trainer}}
    )
    sync = InProcessWeightSync()
    learner = Learner(cfg, "sluice-tiny", sync, start_version=5)
    worker = RolloutWorker(cfg, "hf", "sluice-tiny", sync)
    task = build_task(TaskConfig(**TASK))
    tasks = [
        build_training_task(t, task, build_tokenizer(), ["sluice-tiny*"], 512)
        for t in make_trajectories(8, TaskConfig(**TASK), seed=4, logged_correct=1.0)
    ]
    return learner, worker, tasks


def test_update_publishes_new_weights_and_kl_is_measured() -> None:
    learner, worker, tasks = setup(kl_coef=0.1)
    first = worker.rollout(tasks[:4], seed=1)
    assert first.policy_version == 5 and all(len(g.samples) == 4 for g in first.groups)  # 3 fresh + logged
    assert all(g.samples[-1].is_logged and g.samples[-1].reward == 1.0 for g in first.groups)
    m1 = learner.train_step(first.groups)
    assert m1["updated"] and m1["policy_version"] == 6 and m1["kl"] == pytest.approx(0.0, abs=1e-6)
    second = worker.rollout(tasks[4:], seed=2)
    assert second.policy_version == 6  # the worker picked up the published weights
    m2 = learner.train_step(second.groups)
    assert m2["policy_version"] == 7 and m2["kl"] > 0  # the policy has moved away from the reference


@pytest.mark.parametrize(("policy", "field"), [("drop", "dropped_stale"), ("downweight", "downweighted")])
def test_stale_groups_are_dropped_or_downweighted(policy: str, field: str) -> None:
    learner, worker, tasks = setup(max_staleness=0, stale_policy=policy)
    res = worker.rollout(tasks[:4], seed=3)
    learner.train_step(res.groups)  # v5 -> v6
    m = learner.train_step(res.groups)  # the same groups are now one version behind
    assert m["staleness_max"] == 1 and m[field] == sum(len(g.samples) for g in res.groups)
    assert m["updated"] == (policy == "downweight")
