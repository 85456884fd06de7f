"""`sluice train` in live mode: validate, start (or join) Ray, start the feeder and the live learner (which
aligns the policy servers on its version), run the live loop, checkpoint.

``--resume`` continues from the newest checkpoint under ``trainer.output_dir`` as in the re-sampling mode:
weights (or LoRA adapters on the base model), optimizer, policy version, step, feeder offsets.

    sluice train --config infra/sluice.yaml            # live mode when trainer.task.kind is traffic
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from trainers.config import TINY_MODEL_NAME
from trainers.runner import TrainSummary, _model_limits, _start_state, run_loop, summarize
from trainers.settings import TrainerSettings
from trainers.smollm2 import SMOLLM2_NAME

log = logging.getLogger("sluice.trainer.live")


def run_live_training(
    cfg: TrainerSettings,
    resume: bool = False,
    max_steps: int | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> TrainSummary:
    import ray

    from trainers.live.feeder import LiveFeeder
    from trainers.live.learner import LiveLearner
    from trainers.live.loop import LiveLoop
    from trainers.loop import StopFlag
    from trainers.metrics import MetricsLog
    from trainers.ray_session import ray_session

    t = cfg.trainer
    state, source, resume_from = _start_state(cfg, resume)
    if resume_from is not None and t.live.lora_rank > 0:  # the checkpoint holds adapters: load the base
        source = t.model if t.model in (TINY_MODEL_NAME, SMOLLM2_NAME) else str(cfg.path(t.model))
    tokenizer, max_positions = _model_limits(source, cfg)
    max_steps = max_steps if max_steps is not None else t.max_steps
    output_dir = cfg.path(t.output_dir)
    topic = cfg.topics.name("trajectories_train")
    log.info("trainer config in effect (live mode): %s", t.model_dump_json(exclude={"serve"}))
    stop = StopFlag()
    metrics = MetricsLog(output_dir / "metrics.jsonl")
    with ray_session(cfg):
        learner = ray.remote(num_cpus=1)(LiveLearner).remote(
            t, source, str(output_dir), state.policy_version, resume_from
        )
        feeder = ray.remote(num_cpus=0)(LiveFeeder).remote(
            cfg, tokenizer, max_positions - 1, state.feeder_offsets.get(topic), state.taken_versions
        )
        version = ray.get(learner.get_version.remote())  # built (and the servers aligned) first
        ray.get(feeder.stats.remote())
        servers = t.policy_server_urls() if t.live.push_weights else []
        log.info(
            "live trainer ready: policy v%d, reading %s, pushing to %s", version, topic, servers or "none"
        )
        loop = LiveLoop(t, str(output_dir), topic, feeder, learner, state, metrics, stop, on_step)
        reason, checkpoint = run_loop(loop, max_steps, stop, metrics, feeder, [feeder, learner])
    return summarize(loop, state, reason, checkpoint, [h["reward_mean"] for h in loop.history])
