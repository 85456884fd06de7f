"""Build the configured task with its grader (the provider for tasks)."""

from __future__ import annotations

from pipeline.learn.tasks.registry import build_tasks
from trainers.config import TaskConfig
from trainers.rewards.registry import build_reward
from trainers.tasks.base import Task
from trainers.tasks.learn_task import LearnTask
from trainers.tasks.reverse_digits import ReverseDigitsTask
from trainers.tasks.traffic import TrafficTask


def build_task(cfg: TaskConfig, timeout_s: float = 10.0) -> Task:
    reward = build_reward(cfg.reward)
    if cfg.kind == "learn":
        return LearnTask(build_tasks([str(cfg.learn_task)])[0], timeout_s=timeout_s)
    if cfg.kind == "reverse_digits":
        return ReverseDigitsTask(reward, cfg.min_digits, cfg.max_digits, timeout_s=timeout_s)
    return TrafficTask(reward, reference_key=cfg.reference_key, timeout_s=timeout_s)
