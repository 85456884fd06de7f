"""`sluice train`: validate, start (or join) Ray, start the actors, run the async GRPO loop, checkpoint.

A bad config or an unavailable backend fails before Ray starts. ``--resume`` loads the newest checkpoint
under ``trainer.output_dir``: weights, optimizer, policy version and step (both continue counting), feeder
offsets and the (trajectory, version) pairs already trained. ``--max-steps N`` counts updates of this run.

    sluice train --config infra/sluice.yaml --max-steps 100
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from trainers.checkpoint import TrainerState, latest_checkpoint, read_state
from trainers.config import TINY_MODEL_NAME
from trainers.devices import gpu_share, resolve_device
from trainers.exceptions import CheckpointError
from trainers.rollout.select import resolve_backend
from trainers.settings import TrainerSettings

if TYPE_CHECKING:
    from trainers.loop_core import RunSetup

log = logging.getLogger("sluice.trainer")
live_log = logging.getLogger("sluice.trainer.live")


class TrainSummary(BaseModel):
    stopped: str
    steps: int = Field(description="Learner updates in this run.")
    step: int = Field(description="Step counter after this run (continues across resumes).")
    policy_version: int
    samples: int
    reward_first: float | None = None
    reward_last: float | None = None
    reward_failures: int = 0
    skipped: int = 0
    dead_letters: int = 0
    checkpoint: str | None = None
    elapsed_s: float = 0.0
    history: list[dict[str, Any]] = Field(default_factory=list, exclude=True)


def _model_limits(source: str, cfg: TrainerSettings) -> tuple[Any, int]:
    """The tokenizer (for the feeder) and the model's context length, without loading weights."""
    from trainers.tiny_model import build_tokenizer, load_tokenizer

    if source == TINY_MODEL_NAME:
        return build_tokenizer(), cfg.trainer.tiny.max_positions
    from transformers import AutoConfig

    from trainers.smollm2 import SMOLLM2_NAME, smollm2_dir

    path = str(smollm2_dir()) if source == SMOLLM2_NAME else source
    conf = AutoConfig.from_pretrained(path, local_files_only=True)
    return load_tokenizer(path), int(getattr(conf, "max_position_embeddings", 2048))


def _model_source(cfg: TrainerSettings) -> tuple[str, tuple[str, ...]]:
    """Where the configured model loads from, and the model names built or unpacked locally."""
    from trainers.smollm2 import SMOLLM2_NAME

    t = cfg.trainer
    named = (TINY_MODEL_NAME, SMOLLM2_NAME)  # built or unpacked locally, by name
    return (t.model if t.model in named else str(cfg.path(t.model))), named


def _start_state(cfg: TrainerSettings, resume: bool) -> tuple[TrainerState, str, str | None]:
    t = cfg.trainer
    source, named = _model_source(cfg)
    if source not in named and not Path(source).is_dir():
        raise CheckpointError(
            f"trainer.model: {source} is neither {' nor '.join(map(repr, named))} nor a model directory"
        )
    if not resume:
        return TrainerState(model=t.model), source, None
    found = latest_checkpoint(cfg.path(t.output_dir))
    if found is None:
        log.warning("--resume: no checkpoint under %s, starting from %s", cfg.path(t.output_dir), source)
        return TrainerState(model=t.model), source, None
    state = read_state(found)
    log.info("resuming from %s (step %d, policy v%d)", found, state.step, state.policy_version)
    return state, str(found), str(found)


def prepare_run(cfg: TrainerSettings, resume: bool, max_steps: int | None, live: bool = False) -> RunSetup:
    """The start state (fresh or resumed), the model's tokenizer and context length, the output paths, the
    stop flag and the metrics log of a run. A live run with LoRA checkpoints adapters only: resumed, the
    model loads from the configured base."""
    from trainers.loop_core import RunSetup, StopFlag
    from trainers.metrics import MetricsLog

    t = cfg.trainer
    state, source, resume_from = _start_state(cfg, resume)
    if resume_from is not None and live and t.live.lora_rank > 0:
        source = _model_source(cfg)[0]
    tokenizer, max_positions = _model_limits(source, cfg)
    output_dir = cfg.path(t.output_dir)
    if live:
        live_log.info("trainer config in effect (live mode): %s", t.model_dump_json(exclude={"serve"}))
    else:
        log.info("trainer config in effect: %s", t.model_dump_json(exclude={"serve"}))
    return RunSetup(
        state=state,
        source=source,
        resume_from=resume_from,
        tokenizer=tokenizer,
        max_positions=max_positions,
        max_steps=max_steps if max_steps is not None else t.max_steps,
        output_dir=output_dir,
        topic=cfg.topics.name("trajectories_train"),
        stop=StopFlag(),
        metrics=MetricsLog(output_dir / "metrics.jsonl"),
    )


def start_policy_actors(
    cfg: TrainerSettings, backend: str, source: str, sync: Any, start_version: int, resume_from: str | None
) -> tuple[Any, list[Any]]:
    """The learner and rollout-worker actors, placed by ``trainer.device`` and the backend: the device is
    resolved here, in the driver, since an actor given no GPU sees none; those on the GPU split one."""
    import ray

    from trainers.actors.learner import Learner
    from trainers.actors.rollout_worker import RolloutWorker

    t = cfg.trainer
    device = resolve_device(t.device)
    learner_gpus, worker_gpus = gpu_share(device, backend, t.rollout_workers)
    learner = ray.remote(num_cpus=1, num_gpus=learner_gpus)(Learner).remote(
        cfg, source, sync, start_version, resume_from, device
    )
    workers = [
        ray.remote(num_cpus=1, num_gpus=worker_gpus)(RolloutWorker).remote(
            cfg, backend, source, sync, i, device
        )
        for i in range(t.rollout_workers)
    ]
    return learner, workers


def run_training(
    cfg: TrainerSettings,
    resume: bool = False,
    max_steps: int | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> TrainSummary:
    import ray

    from trainers.actors.feeder import TaskFeeder
    from trainers.loop import AsyncGRPOLoop
    from trainers.ray_session import ray_session
    from trainers.weight_sync.ray_object_store import RayObjectStoreWeightSync

    t = cfg.trainer
    if t.resolved_mode == "live":  # the traffic is the rollout: no rollout workers
        from trainers.live.runner import run_live_training

        return run_live_training(cfg, prepare_run(cfg, resume, max_steps, live=True), on_step)
    backend = resolve_backend(t.backend)  # before Ray starts
    resolve_device(t.device)  # likewise: cuda without a GPU fails here
    run = prepare_run(cfg, resume, max_steps)
    state = run.state
    with ray_session(cfg):
        sync = RayObjectStoreWeightSync()
        learner, workers = start_policy_actors(
            cfg, backend, run.source, sync, state.policy_version, run.resume_from
        )
        feeder = ray.remote(num_cpus=0)(TaskFeeder).remote(
            cfg,
            run.tokenizer,
            run.max_positions - t.max_new_tokens,
            state.feeder_offsets.get(run.topic),
            state.taken_versions,
        )
        # actors start in parallel (imports, model build); wait for all before the clock starts
        ray.get([learner.get_version.remote(), feeder.stats.remote(), *[w.info.remote() for w in workers]])
        loop = AsyncGRPOLoop(t, run, feeder, workers, learner, on_step)
        reason, checkpoint = run_loop(loop, run, feeder, [feeder, learner, *workers, sync.board])
    rewards = [h["reward_mean"] for h in loop.history if h["reward_mean"] == h["reward_mean"]]
    return summarize(loop, state, reason, checkpoint, rewards, reward_failures=loop.failures_total)


def run_loop(loop: Any, run: RunSetup, feeder: Any, actors: list[Any]) -> tuple[str, str]:
    """Run a training loop to its end and checkpoint it, with the stop signals installed; then close
    the metrics log and the feeder and kill the actors, whatever happened. Returns (reason, checkpoint)."""
    import ray

    run.stop.install()
    try:
        reason = loop.run(run.max_steps)
        checkpoint = loop.checkpoint()
    finally:
        run.stop.restore()
        run.metrics.close()
        ray.get(feeder.close.remote())
        for actor in actors:
            ray.kill(actor)
    return reason, checkpoint


def summarize(
    loop: Any,
    state: TrainerState,
    reason: str,
    checkpoint: str | None,
    rewards: list[float],
    reward_failures: int = 0,
) -> TrainSummary:
    """The summary of a finished run: ``rewards`` are the per-update mean rewards it counts."""
    hist = loop.history
    return TrainSummary(
        stopped=reason,
        steps=len(hist),
        step=state.step,
        policy_version=state.policy_version,
        samples=state.samples,
        reward_first=rewards[0] if rewards else None,
        reward_last=rewards[-1] if rewards else None,
        reward_failures=reward_failures,
        skipped=int(loop.feeder_stats.get("skipped", 0)),
        dead_letters=int(loop.feeder_stats.get("dead_letters", 0)),
        checkpoint=checkpoint,
        elapsed_s=hist[-1]["elapsed_s"] if hist else 0.0,
        history=hist,
    )
