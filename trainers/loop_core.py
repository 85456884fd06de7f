"""What the training loops share: the stop flag, the drive of a loop (updates, progress, periodic
checkpoints, the idle stop), the per-update record (metrics line, history, state, callback) and the
checkpoint of the feeder's offsets together with the learner's weights."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

from trainers.checkpoint import TrainerState
from trainers.config import TrainerConfig
from trainers.metrics import MetricsLog, StepProgress
from trainers.samples import FedItem

OnStep = Callable[[dict[str, Any]], None]


class StopFlag:
    """Set by SIGINT/SIGTERM (main thread only) or by the caller."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason = ""
        self._old: dict[int, Any] = {}

    def set(self, reason: str) -> None:
        if not self.event.is_set():
            self.reason = reason
            self.event.set()

    def __bool__(self) -> bool:
        return self.event.is_set()

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, lambda s, _f: self.set(signal.Signals(s).name))

    def restore(self) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        self._old.clear()


@dataclass
class RunSetup:
    """What a training run starts from: its state (fresh or resumed), the model's source, tokenizer and
    context length, and where it writes."""

    state: TrainerState
    source: str
    resume_from: str | None
    tokenizer: Any
    max_positions: int
    max_steps: int | None
    output_dir: Path
    topic: str
    stop: StopFlag
    metrics: MetricsLog


class TrainingLoop:
    """A loop over a feeder and a learner actor. Subclasses say what one turn does (``_turn``: yields
    the metrics of each update it made), when it is busy (``_busy``) and what is not trained yet
    (``untrained``)."""

    log = logging.getLogger("sluice.trainer")

    def __init__(
        self, tcfg: TrainerConfig, run: RunSetup, feeder: Any, learner: Any, on_step: OnStep | None = None
    ) -> None:
        self.t, self.output_dir, self.topic = tcfg, str(run.output_dir), run.topic
        self.feeder, self.learner = feeder, learner
        self.state, self.metrics, self.stop, self.on_step = run.state, run.metrics, run.stop, on_step
        self.feeder_stats: dict[str, Any] = {}
        self.history: list[dict[str, Any]] = []
        self.checkpoint_path: str | None = None

    def run(self, max_steps: int | None) -> str:
        """Turn until stopped, ``max_steps`` updates are made or the data stays away ``idle_timeout_s``;
        returns why it stopped."""
        start = time.monotonic()
        self.last_step_at = self.last_data_at = start
        self._begin()
        steps = 0
        with StepProgress(max_steps, enabled=self.t.progress) as progress:
            while not self.stop:
                if max_steps is not None and steps >= max_steps:
                    self.stop.set("max_steps")
                    break
                for m in self._turn(start):
                    steps += 1
                    progress.update(m)
                    if self.state.step % self.t.checkpoint_every == 0:
                        self.checkpoint()
                idle_for = time.monotonic() - self.last_data_at
                if (
                    self.t.idle_timeout_s is not None
                    and idle_for > self.t.idle_timeout_s
                    and not self._busy()
                ):
                    self.stop.set("idle")
        self._end(start)
        return self.stop.reason

    def _begin(self) -> None:
        """Before the first turn."""

    def _end(self, start: float) -> None:
        """After the last turn."""

    def _turn(self, start: float) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def _busy(self) -> bool:
        raise NotImplementedError

    def untrained(self) -> list[Any]:
        raise NotImplementedError

    def feeder_totals(self) -> dict[str, Any]:
        """The feeder's running counts, as they go into a metrics line."""
        return {
            "skipped_total": self.feeder_stats.get("skipped", 0),
            "dead_letters_total": self.feeder_stats.get("dead_letters", 0),
            "duplicates_total": self.feeder_stats.get("duplicates", 0),
        }

    def _record(self, m: dict[str, Any]) -> None:
        """One update's metrics: to the log, the history and the trainer state, then ``_recorded`` and the
        caller's ``on_step``."""
        self.metrics.write(m)
        self.history.append(m)
        self.state.last_metrics = {k: v for k, v in m.items() if isinstance(v, int | float)}
        self._recorded(m)
        if self.on_step is not None:
            self.on_step(m)

    def _recorded(self, m: dict[str, Any]) -> None:
        """After an update's metrics are recorded, before the caller hears of it."""

    def checkpoint(self) -> str:
        self.checkpoint_path = save_checkpoint(
            self.feeder, self.learner, self.output_dir, self.topic, self.state, self.untrained(), self.log
        )
        return self.checkpoint_path


def save_checkpoint(
    feeder: Any,
    learner: Any,
    output_dir: str,
    topic: str,
    state: TrainerState,
    untrained: Iterable[FedItem],
    logger: logging.Logger,
) -> str:
    """Checkpoint a loop: the feeder's offsets up to the oldest item not yet trained (those stay to be
    read again) and the versions taken go into ``state``, which the learner saves with its weights."""
    keep = [(i.trajectory_id, i.version, i.partition, i.offset) for i in untrained]
    offsets, taken = ray.get(feeder.checkpoint.remote(keep))
    state.feeder_offsets = {topic: offsets}
    state.taken_versions = taken
    path: str = ray.get(learner.save.remote(output_dir, state))
    logger.info("checkpoint %s (step %d, policy v%d)", path, state.step, state.policy_version)
    return path
