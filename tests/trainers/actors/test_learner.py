"""Learner and rollout worker in one process (no Ray): updates, weight sync, KL, staleness handling."""

from __future__ import annotations

import math

import pytest

from app.config import parse_config
from testing.toy_traffic import make_trajectories
from trainers.actors.learner import Learner
from trainers.actors.rollout_worker import RolloutWorker
from trainers.config import TaskConfig
from trainers.task_builder import build_training_task
from trainers.tasks.registry import build_task
from trainers.tiny_model import build_tokenizer
from trainers.weight_sync.in_process import InProcessWeightSync

TASK = {"kind": "reverse_digits", "max_digits": 1, "reward": {"kind": "exact_match"}}


def setup(**trainer: object) -> tuple[Learner, RolloutWorker, list]:
    cfg = parse_config(
        {"trainer": {"task": TASK, "group_size": 4, "tasks_per_step": 4, "max_new_tokens": 3, **trainer}}
    )
    sync = InProcessWeightSync()
    learner = Learner(cfg.trainer_settings(), "sluice-tiny", sync, start_version=5)
    worker = RolloutWorker(cfg.trainer_settings(), "hf", "sluice-tiny", sync)
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


def _signal_groups(worker: RolloutWorker, tasks: list) -> list:
    """Real rollouts, with rewards set so every group has variance: half its members right, half wrong."""
    res = worker.rollout(tasks, seed=11)
    return [
        g.model_copy(
            update={
                "samples": [s.model_copy(update={"reward": float(i % 2)}) for i, s in enumerate(g.samples)]
            }
        )
        for g in res.groups
    ]


def test_zero_signal_groups_count_in_the_loss_mean() -> None:
    """The token mean runs over the whole batch: groups without signal dilute the step instead of leaving
    the few informative groups to take a full-size step on their own."""
    learner, worker, tasks = setup(include_logged=False)
    signal = _signal_groups(worker, tasks[:2])
    flat = [
        g.model_copy(update={"samples": [s.model_copy(update={"reward": 0.0}) for s in g.samples]})
        for g in worker.rollout(tasks[2:4], seed=12).groups
    ]
    alone = learner.train_step(signal)
    learner2, _, _ = setup(include_logged=False)
    diluted = learner2.train_step(signal + flat)
    tokens = lambda gs: sum(len(s.token_ids) for g in gs for s in g.samples)  # noqa: E731
    assert diluted["zero_signal_groups"] == 2 and diluted["trained_samples"] == alone["trained_samples"]
    assert diluted["loss"] == pytest.approx(alone["loss"] * tokens(signal) / tokens(signal + flat), rel=1e-5)


def _kl_on(learner: Learner, groups: list, before: list[list[float]]) -> float:
    from trainers.generation import sequence_logprobs

    total = n = 0.0
    pairs = [(g, s) for g in groups for s in g.samples]
    for (group, s), old in zip(pairs, before, strict=True):
        new = sequence_logprobs(learner.model, group.prompt_ids, s.token_ids)
        for a, b in zip(new, old, strict=True):
            r = math.exp(a - b)
            total, n = total + r - 1 - (a - b), n + 1
    return total / n


@pytest.mark.parametrize("bound", [0.05, None])
def test_one_update_moves_the_policy_at_most_max_update_kl(bound: float | None) -> None:
    """With a learning rate far too high, the unbounded step wrecks the policy on its own samples; the
    bounded one is shortened until KL(old || new) on the trained tokens is within max_update_kl."""
    from trainers.generation import sequence_logprobs

    learner, worker, tasks = setup(include_logged=False, learning_rate=0.05, max_update_kl=bound)
    groups = _signal_groups(worker, tasks[:4])
    before = [sequence_logprobs(learner.model, g.prompt_ids, s.token_ids) for g in groups for s in g.samples]
    m = learner.train_step(groups)
    kl = _kl_on(learner, groups, before)
    if bound is None:
        assert m["updated"] and m["update_scale"] == 1.0 and kl > 10 * 0.05
    else:
        assert m["update_backtracks"] >= 1 and m["update_scale"] < 1.0
        assert kl <= bound * 1.01 and m["update_kl"] == pytest.approx(kl, rel=1e-3, abs=1e-6)
        assert m["updated"] == (m["update_scale"] > 0) and m["policy_version"] == 5 + int(m["updated"])
