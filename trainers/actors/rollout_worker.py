"""Rollout worker: pulls the newest weights, samples a group per task, scores every member with the task's
grader, and returns scored groups tagged with the policy version that produced them.

The logged traffic completion joins its group as an off-policy member (``include_logged``), scored by the
same grader (so a ``logged`` reward part applies to it alone), with its behaviour logprobs when recorded.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from pydantic import BaseModel, Field

from trainers.devices import Device
from trainers.rollout.base import SamplingSpec
from trainers.rollout.select import build_backend
from trainers.samples import Group, Sample, TrainingTask
from trainers.settings import TrainerSettings
from trainers.tasks.registry import build_task
from trainers.tiny_model import load_model
from trainers.weight_sync.base import WeightSync


class RolloutResult(BaseModel):
    groups: list[Group]
    generated_tokens: int = 0
    generate_s: float = 0.0
    score_s: float = 0.0
    reward_failures: int = 0
    reward_errors: list[str] = Field(default_factory=list, description="A few failure messages, for the log.")
    policy_version: int = -1


class RolloutWorker:
    def __init__(
        self,
        cfg: TrainerSettings,
        backend_kind: str,
        model_source: str,
        weight_sync: WeightSync,
        index: int = 0,
        device: Device = "cpu",
    ) -> None:
        torch.set_num_threads(1)
        self.tcfg = cfg.trainer
        model, self.tokenizer = load_model(model_source, cfg.trainer.tiny)
        if backend_kind == "hf":  # vLLM builds its own engine from the CPU copy
            model = model.to(device)
        self.backend = build_backend(backend_kind, model, self.tokenizer, version=-1)  # type: ignore[arg-type]
        self.task = build_task(cfg.trainer.task, cfg.trainer.reward_timeout_s)
        self.sync = weight_sync
        self.index = index

    def sync_weights(self, first_wait_s: float = 120.0) -> int:
        """Load the newest published weights; before the first ones exist, wait for them."""
        got = self.sync.fetch(newer_than=self.backend.policy_version)
        deadline = time.monotonic() + first_wait_s
        while got is None and self.backend.policy_version < 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            got = self.sync.fetch(newer_than=-1)
        if got is not None:
            state, version = got
            self.backend.load_weights(state, version)
        return self.backend.policy_version

    def rollout(self, tasks: list[TrainingTask], seed: int | None = None) -> RolloutResult:
        version = self.sync_weights()
        spec = SamplingSpec(
            n=self.tcfg.fresh_per_group,
            max_tokens=self.tcfg.max_new_tokens,
            temperature=self.tcfg.temperature,
            seed=seed,
        )
        t0 = time.perf_counter()
        completions = self.backend.generate([t.prompt_ids for t in tasks], spec)
        t1 = time.perf_counter()
        groups, failures, errors, tokens = [], 0, [], 0
        for task, comps in zip(tasks, completions, strict=True):
            samples: list[Sample] = []
            for c in comps:
                tokens += len(c.token_ids)
                outcome = self.task.grade(
                    c.text, self.task.context(task.messages, task.reference, task.logged_reward)
                )
                samples.append(
                    Sample(
                        token_ids=c.token_ids, logprobs=c.logprobs, reward=outcome.value, reward_failed=outcome.failed,
                        reward_error=outcome.error, policy_version=c.policy_version,
                        finish_reason=c.finish_reason, text=c.text,
                    )
                )  # fmt: skip
            if self.tcfg.include_logged and task.logged is not None:
                ctx = self.task.context(task.messages, task.reference, task.logged_reward, is_logged=True)
                outcome = self.task.grade(task.logged.text, ctx)
                samples.append(
                    Sample(
                        token_ids=task.logged.token_ids, logprobs=task.logged.logprobs, reward=outcome.value,
                        reward_failed=outcome.failed, reward_error=outcome.error, policy_version=-1,
                        is_logged=True, text=task.logged.text,
                    )
                )  # fmt: skip
            for s in samples:
                if s.reward_failed:
                    failures += 1
                    if len(errors) < 3:
                        errors.append(s.reward_error or "")
            groups.append(
                Group(task_key=task.key, prompt_ids=task.prompt_ids, samples=samples, policy_version=version)
            )
        return RolloutResult(
            groups=groups,
            generated_tokens=tokens,
            generate_s=t1 - t0,
            score_s=time.perf_counter() - t1,
            reward_failures=failures,
            reward_errors=errors,
            policy_version=version,
        )

    def info(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "backend": self.backend.name,
            "policy_version": self.backend.policy_version,
            "device": str(getattr(self.backend, "device", "cuda" if self.backend.name == "vllm" else "cpu")),
        }
