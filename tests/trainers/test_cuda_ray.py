"""The async trainer's Ray actors on a GPU, placed as `sluice train` places them (``start_policy_actors``):
the learner and an hf rollout worker split the one GPU, both see CUDA, and an update goes round through Ray's
object store to the worker. Skips without CUDA or Ray."""

from __future__ import annotations

import pytest
import torch

from app.config import parse_config
from testing.toy_traffic import make_trajectories
from trainers.config import TaskConfig
from trainers.runner import start_policy_actors
from trainers.task_builder import build_training_task
from trainers.tasks.registry import build_task
from trainers.tiny_model import build_tokenizer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
ray = pytest.importorskip("ray")

TASK = {"kind": "reverse_digits", "max_digits": 2, "reward": {"kind": "exact_match"}}


def _device_of(actor) -> str:  # noqa: ANN001 - a Ray actor handle
    return ray.get(actor.__ray_call__.remote(lambda self: str(next(self.model.parameters()).device)))


def test_learner_and_worker_actors_share_the_gpu_and_exchange_weights(tmp_path) -> None:
    from trainers.ray_session import ray_session
    from trainers.weight_sync.ray_object_store import RayObjectStoreWeightSync

    settings = parse_config(
        {"trainer": {"task": TASK, "group_size": 4, "tasks_per_step": 4, "max_new_tokens": 4,
                     "include_logged": False, "num_cpus": 2}},
        base_dir=tmp_path,
    ).trainer_settings()  # fmt: skip
    task = build_task(TaskConfig(**TASK))
    tasks = [
        build_training_task(t, task, build_tokenizer(), ["sluice-tiny*"], 512)
        for t in make_trajectories(4, TaskConfig(**TASK), seed=4)
    ]
    with ray_session(settings):
        assert ray.cluster_resources().get("GPU", 0) >= 1
        learner, workers = start_policy_actors(
            settings, "hf", "sluice-tiny", RayObjectStoreWeightSync(), 0, None
        )
        assert _device_of(learner).startswith("cuda")
        assert ray.get(workers[0].info.remote())["device"].startswith("cuda")
        first = ray.get(workers[0].rollout.remote(tasks, 1))
        groups = [
            g.model_copy(update={"samples": [s.model_copy(update={"reward": float(i % 2)})
                                             for i, s in enumerate(g.samples)]})
            for g in first.groups
        ]  # fmt: skip
        m = ray.get(learner.train_step.remote(groups))
        assert m["updated"] and m["policy_version"] == 1
        second = ray.get(workers[0].rollout.remote(tasks, 2))
        assert second.policy_version == 1  # the worker loaded the update from the object store
        for a in (learner, *workers):
            ray.kill(a)
