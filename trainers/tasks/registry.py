"""Build the configured task with its grader (the provider for tasks)."""

from __future__ import annotations

from trainers.config import TaskConfig
from trainers.rewards.registry import build_reward
from trainers.tasks.base import Task
from trainers.tasks.reverse_digits import ReverseDigitsTask
from trainers.tasks.traffic import TrafficTask


def build_task(cfg: TaskConfig, timeout_s: float = 10.0) -> Task:
    reward = build_reward(cfg.reward)
    if cfg.kind == "reverse_digits":
        return ReverseDigitsTask(reward, cfg.min_digits, cfg.max_digits, timeout_s=timeout_s)
    return TrafficTask(reward, reference_key=cfg.reference_key, timeout_s=timeout_s)
