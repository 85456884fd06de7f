"""`sluice train` in live mode: validate, start (or join) Ray, start the feeder and the live learner (which
aligns the policy servers on its version), run the live loop (each new version's lineage to the ledger,
then its push), checkpoint.

``--resume`` continues from the newest checkpoint under ``trainer.output_dir`` as in the re-sampling mode:
weights (or LoRA adapters on the base model), optimizer, policy version, step, feeder offsets.

    sluice train --config infra/sluice.yaml            # live mode when trainer.task.kind is traffic
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from trainers.runner import TrainSummary, run_loop, summarize
from trainers.settings import TrainerSettings

if TYPE_CHECKING:
    from trainers.loop_core import OnStep, RunSetup

log = logging.getLogger("sluice.trainer.live")


def run_live_training(cfg: TrainerSettings, run: RunSetup, on_step: OnStep | None = None) -> TrainSummary:
    """Start the live actors, run the live loop on ``run`` to its end, checkpoint; the summary."""
    import ray

    from trainers.devices import gpu_share, resolve_device
    from trainers.live.feeder import LiveFeeder
    from trainers.live.learner import LiveLearner
    from trainers.live.lineage import LineageLedger
    from trainers.live.loop import LiveLoop
    from trainers.ray_session import ray_session

    t = cfg.trainer
    state, topic = run.state, run.topic
    device = resolve_device(t.device)  # here: an actor given no GPU sees none
    learner_gpus, _ = gpu_share(device, t.backend, rollout_workers=0)  # live mode: the servers sample
    with ray_session(cfg):
        learner = ray.remote(num_cpus=1, num_gpus=learner_gpus)(LiveLearner).remote(
            t, run.source, str(run.output_dir), state.policy_version, run.resume_from, device
        )
        feeder = ray.remote(num_cpus=0)(LiveFeeder).remote(
            cfg, run.tokenizer, run.max_positions - 1, state.feeder_offsets.get(topic), state.taken_versions
        )
        version = ray.get(learner.get_version.remote())  # built (and the servers aligned) first
        ray.get(feeder.stats.remote())
        servers = t.policy_server_urls() if t.live.push_weights else []
        log.info(
            "live trainer ready: policy v%d on %s, reading %s, pushing to %s",
            version, device, topic, servers or "none",
        )  # fmt: skip
        ledger = LineageLedger(cfg.broker, cfg.topics) if t.live.push_weights else None
        loop = LiveLoop(t, run, feeder, learner, on_step, ledger)
        try:
            reason, checkpoint = run_loop(loop, run, feeder, [feeder, learner])
        finally:
            if ledger is not None:
                ledger.close()
    return summarize(loop, state, reason, checkpoint, [h["reward_mean"] for h in loop.history])
