"""The driver of async GRPO: keeps rollout workers and the learner busy at the same time, within the
staleness bound, and checkpoints.

Scheduling (AReaL-style, on the driver): a rollout may start only if the batch it produces will be trained
at most ``max_staleness`` learner updates after the weights it samples with; so with one worker and
``max_staleness: 1`` the worker samples batch k+1 while the learner trains batch k (~2x a synchronous loop
on two cores), and with ``max_staleness: 0`` the loop is synchronous. The learner enforces the bound again
on what it receives (drop or down-weight). Offsets and taken versions are checkpointed only for tasks that
were trained, so a crash re-reads the rest (at-least-once in, once per (id, version) out).
"""

from __future__ import annotations

import logging
import math
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import ray

from trainers.checkpoint import TrainerState
from trainers.config import TrainerConfig
from trainers.metrics import MetricsLog, StepProgress, reward_stats
from trainers.samples import FedItem, Group, TrainingTask

log = logging.getLogger("sluice.trainer")


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


class AsyncGRPOLoop:
    def __init__(
        self,
        tcfg: TrainerConfig,
        output_dir: str,
        topic: str,
        feeder: Any,
        workers: list[Any],
        learner: Any,
        state: TrainerState,
        metrics: MetricsLog,
        stop: StopFlag,
        on_step: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.t, self.output_dir, self.topic = tcfg, output_dir, topic
        self.feeder, self.workers, self.learner = feeder, workers, learner
        self.state, self.metrics, self.stop, self.on_step = state, metrics, stop, on_step
        self.queue: deque[TrainingTask] = deque()
        self.buffer: list[tuple[Group, TrainingTask]] = []
        self.in_flight: dict[Any, tuple[int, list[TrainingTask]]] = {}  # rollout ref -> (worker, tasks)
        self.idle = set(range(len(workers)))
        self.per_call = math.ceil(tcfg.tasks_per_step / len(workers))
        self.feed_ref: Any = None
        self.feed_asked = 0
        self.drained = False
        self.learn_ref: Any = None
        self.learn_groups: list[tuple[Group, TrainingTask]] = []
        self.feeder_stats: dict[str, Any] = {}
        self.failures_total = 0
        self.calls = 0
        self.history: list[dict[str, Any]] = []
        self.checkpoint_path: str | None = None

    # ----------------------------------------------------------------------------- scheduling

    def _batches_ahead(self) -> int:
        groups = len(self.buffer) + sum(len(t) for _, t in self.in_flight.values())
        return (1 if self.learn_ref is not None else 0) + groups // self.t.tasks_per_step

    def _request_tasks(self) -> None:
        want = self.per_call * max(1, len(self.idle)) - len(self.queue)
        if self.feed_ref is None and want > 0:
            self.feed_asked = want
            self.feed_ref = self.feeder.take.remote(want, self.t.poll_timeout_s)

    def _launch_rollouts(self) -> None:
        for w in sorted(self.idle):
            ready = len(self.queue) >= self.per_call or (self.drained and self.queue)
            if not ready or self._batches_ahead() > self.t.max_staleness:
                return
            tasks = [self.queue.popleft() for _ in range(min(self.per_call, len(self.queue)))]
            self.calls += 1
            seed = self.t.seed * 1_000_003 + self.state.step * 101 + self.calls
            self.in_flight[self.workers[w].rollout.remote(tasks, seed)] = (w, tasks)
            self.idle.discard(w)

    def _launch_learner(self) -> None:
        if self.learn_ref is not None or not self.buffer:
            return
        tail = self.drained and not self.queue and not self.in_flight  # train a partial last batch
        if len(self.buffer) < self.t.tasks_per_step and not tail:
            return
        self.learn_groups, self.buffer = (
            self.buffer[: self.t.tasks_per_step],
            self.buffer[self.t.tasks_per_step :],
        )
        self.learn_ref = self.learner.train_step.remote([g for g, _ in self.learn_groups])

    # ----------------------------------------------------------------------------- main loop

    def run(self, max_steps: int | None) -> str:
        start = time.monotonic()
        self.last_step_at = start
        self.last_data_at = start
        steps_this_run = 0
        with StepProgress(max_steps, enabled=self.t.progress) as progress:
            while not self.stop:
                if max_steps is not None and steps_this_run >= max_steps:
                    self.stop.set("max_steps")
                    break
                self._request_tasks()
                self._launch_rollouts()
                self._launch_learner()
                refs = [r for r in (self.feed_ref, self.learn_ref) if r is not None] + list(self.in_flight)
                if not refs:  # nothing in flight (e.g. the queue waits on the staleness gate): re-plan
                    time.sleep(0.05)
                    continue
                done, _ = ray.wait(refs, num_returns=1, timeout=1.0)
                for ref in done:
                    if ref is self.feed_ref or ref == self.feed_ref:
                        self._on_tasks(ray.get(ref))
                    elif ref in self.in_flight:
                        self._on_rollout(ref)
                    else:
                        m = self._on_learned(ray.get(ref), start)
                        steps_this_run += 1
                        progress.update(m)
                        if self.state.step % self.t.checkpoint_every == 0:
                            self.checkpoint()
                idle_for = time.monotonic() - self.last_data_at
                if (
                    self.t.idle_timeout_s is not None
                    and idle_for > self.t.idle_timeout_s
                    and not (self.queue or self.buffer or self.in_flight or self.learn_ref)
                ):
                    self.stop.set("idle")
        if self.learn_ref is not None:  # finish the update in progress so the checkpoint includes it
            self._on_learned(ray.get(self.learn_ref), start)
        return self.stop.reason

    def _on_tasks(self, result: tuple[list[TrainingTask], dict[str, Any]]) -> None:
        tasks, self.feeder_stats = result
        self.feed_ref = None
        self.drained = len(tasks) < self.feed_asked
        if tasks:
            self.last_data_at = time.monotonic()
        self.queue.extend(tasks)

    def _on_rollout(self, ref: Any) -> None:
        w, tasks = self.in_flight.pop(ref)
        self.idle.add(w)
        res = ray.get(ref)
        for err in res.reward_errors:
            log.warning("reward failure (recorded as 0): %s", err)
        self.buffer.extend(zip(res.groups, tasks, strict=True))
        self.last_data_at = time.monotonic()

    def _on_learned(self, lm: dict[str, Any], start: float) -> dict[str, Any]:
        groups = [g for g, _ in self.learn_groups]
        self.learn_ref, self.learn_groups = None, []
        now = time.monotonic()
        window = max(1e-9, now - self.last_step_at)
        self.last_step_at = now
        rs = reward_stats(groups)
        self.failures_total += int(rs["reward_failures"])
        self.state.step += 1
        self.state.samples += int(rs["fresh_samples"])
        self.state.policy_version = lm["policy_version"]
        m: dict[str, Any] = {
            "step": self.state.step,
            "policy_version": lm["policy_version"],
            "elapsed_s": now - start,
            **rs,
            "reward_failures_total": self.failures_total,
            **{k: v for k, v in lm.items() if k not in ("policy_version",)},
            "samples_per_s": rs["fresh_samples"] / window,
            "tokens_per_s": rs["generated_tokens"] / window,
            "samples_total": self.state.samples,
            "skipped_total": self.feeder_stats.get("skipped", 0),
            "dead_letters_total": self.feeder_stats.get("dead_letters", 0),
            "duplicates_total": self.feeder_stats.get("duplicates", 0),
        }
        self.metrics.write(m)
        self.history.append(m)
        self.state.last_metrics = {k: v for k, v in m.items() if isinstance(v, int | float)}
        if self.on_step is not None:
            self.on_step(m)
        return m

    # ----------------------------------------------------------------------------- checkpoints

    def untrained(self) -> list[TrainingTask]:
        tasks = list(self.queue) + [t for _, t in self.buffer]
        for _, ts in self.in_flight.values():
            tasks.extend(ts)
        return tasks

    def checkpoint(self) -> str:
        if self.feed_ref is not None:  # the feeder is single-threaded: let its take() finish first
            self._on_tasks(ray.get(self.feed_ref))
        self.checkpoint_path = save_checkpoint(
            self.feeder, self.learner, self.output_dir, self.topic, self.state, self.untrained(), log
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
