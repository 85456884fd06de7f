"""GRPO groups from traffic: by task id or prompt, ready at group_size or after group_wait_s; one-member
groups against the task's running baseline; a trajectory trains once, on its newest version."""

from __future__ import annotations

import math

import pytest

from testing.live_steps import step, trajectory
from trainers.live.extract import extract_samples
from trainers.live.grouping import GroupAssembler, RunningBaseline
from trainers.live.samples import LiveItem
from trainers.tiny_model import build_tokenizer

TOK = build_tokenizer()


def item(
    tid: str, reward: float, task: str | None = "q1", prompt: list[int] | None = None, v: int = 1
) -> LiveItem:
    traj = trajectory([step(0, prompt or [1, 2], [3], task_id=task)], reward=reward, tid=tid, version=v)
    return extract_samples(traj, TOK, ["*"], 100)


def test_a_full_group_gets_group_normalised_advantages() -> None:
    g = GroupAssembler(group_size=4, group_wait_s=60, baseline_decay=0.9, scale=True)
    for i, r in enumerate([1.0, 0.0, 0.0]):
        g.add(item(f"t{i}", r), now=0.0)
    assert g.take_ready(now=1.0) == []  # 3 of 4, not waited long enough
    g.add(item("t3", 1.0), now=2.0)
    rows = g.take_ready(now=2.0)
    assert sorted(round(r.advantage, 4) for r in rows) == [-1.0, -1.0, 1.0, 1.0]
    assert g.groups == {}


def test_a_group_that_waited_trains_as_it_is_and_groups_are_per_task() -> None:
    g = GroupAssembler(group_size=8, group_wait_s=10, baseline_decay=0.9, scale=False)
    g.add(item("a", 1.0, task="x"), now=0.0)
    g.add(item("b", 0.0, task="x"), now=0.0)
    g.add(item("c", 1.0, task="y"), now=5.0)
    rows = g.take_ready(now=10.0)
    assert {r.sample.trajectory_id: r.advantage for r in rows} == {"a": 0.5, "b": -0.5}
    assert list(g.groups) == ["task:y"]


def test_without_task_ids_the_prompt_groups() -> None:
    g = GroupAssembler(group_size=2, group_wait_s=60, baseline_decay=0.9, scale=True)
    g.add(item("a", 1.0, task=None, prompt=[1, 2]), now=0.0)
    g.add(item("b", 0.0, task=None, prompt=[1, 3]), now=0.0)
    assert g.take_ready(now=0.0) == []
    g.add(item("c", 0.0, task=None, prompt=[1, 2]), now=0.0)
    assert {r.sample.trajectory_id for r in g.take_ready(now=0.0)} == {"a", "c"}


def test_equal_rewards_carry_no_signal_but_feed_the_baseline() -> None:
    g = GroupAssembler(group_size=2, group_wait_s=60, baseline_decay=0.5, scale=False)
    g.add(item("a", 1.0), now=0.0)
    g.add(item("b", 1.0), now=0.0)
    assert g.take_ready(now=0.0) == [] and g.counts["zero_signal_groups"] == 1
    assert g.baselines["task:q1"].mean == 1.0 and g.baselines["task:q1"].count == 2


def test_a_one_member_group_is_compared_with_its_tasks_running_baseline() -> None:
    g = GroupAssembler(group_size=4, group_wait_s=0, baseline_decay=0.5, scale=False)
    g.add(item("a", 1.0), now=0.0)
    assert g.take_ready(now=0.0) == []  # the task's first reward only starts its baseline
    assert g.counts["no_baseline_samples"] == 1
    g.add(item("b", 0.0), now=1.0)
    (row,) = g.take_ready(now=1.0)
    assert row.advantage == pytest.approx(-1.0)  # 0.0 - baseline 1.0
    g.add(item("c", 1.0), now=2.0)
    (row,) = g.take_ready(now=2.0)
    assert row.advantage == pytest.approx(0.5)  # baseline after 1, 0 with decay 0.5: 0.5


def test_running_baseline_scales_by_its_spread_once_it_has_one() -> None:
    b = RunningBaseline(decay=0.5)
    b.update(1.0)
    assert b.advantage(0.0, scale=True) == -1.0  # no spread yet: unscaled
    b.update(0.0)
    assert b.mean == 0.5 and b.var == pytest.approx(0.25)  # decay * (0 + (1 - decay) * 1 ** 2)
    assert b.advantage(1.0, scale=True) == pytest.approx(0.5 / (math.sqrt(0.25) + 1e-6))


def test_the_newest_version_of_a_waiting_trajectory_replaces_it_and_a_trained_one_never_trains_again() -> (
    None
):
    g = GroupAssembler(group_size=2, group_wait_s=60, baseline_decay=0.9, scale=False)
    g.add(item("a", 0.0, v=1), now=0.0)
    g.add(item("a", 1.0, v=2), now=0.0)  # a late reward: version 2 wins
    g.add(item("a", 0.0, v=1), now=0.0)  # a redelivered old version changes nothing
    g.add(item("b", 0.0), now=0.0)
    rows = g.take_ready(now=0.0)
    assert {r.sample.trajectory_id: r.sample.reward for r in rows} == {"a": 1.0, "b": 0.0}
    assert g.counts["superseded"] == 1
    g.add(item("a", 0.5, v=3), now=1.0)
    assert g.counts["already_trained"] == 1 and g.groups == {}
