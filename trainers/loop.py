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

import math
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import ray

from trainers.config import TrainerConfig
from trainers.loop_core import OnStep, RunSetup, StopFlag, TrainingLoop
from trainers.metrics import reward_stats
from trainers.samples import Group, TrainingTask

__all__ = ["AsyncGRPOLoop", "StopFlag"]


class AsyncGRPOLoop(TrainingLoop):
    def __init__(
        self,
        tcfg: TrainerConfig,
        run: RunSetup,
        feeder: Any,
        workers: list[Any],
        learner: Any,
        on_step: OnStep | None = None,
    ) -> None:
        super().__init__(tcfg, run, feeder, learner, on_step)
        self.workers = workers
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
        self.failures_total = 0
        self.calls = 0

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

    def _turn(self, start: float) -> Iterator[dict[str, Any]]:
        self._request_tasks()
        self._launch_rollouts()
        self._launch_learner()
        refs = [r for r in (self.feed_ref, self.learn_ref) if r is not None] + list(self.in_flight)
        if not refs:  # nothing in flight (e.g. the queue waits on the staleness gate): re-plan
            time.sleep(0.05)
            return
        done, _ = ray.wait(refs, num_returns=1, timeout=1.0)
        for ref in done:
            if ref is self.feed_ref or ref == self.feed_ref:
                self._on_tasks(ray.get(ref))
            elif ref in self.in_flight:
                self._on_rollout(ref)
            else:
                yield self._on_learned(ray.get(ref), start)

    def _busy(self) -> bool:
        return bool(self.queue or self.buffer or self.in_flight or self.learn_ref)

    def _end(self, start: float) -> None:
        if self.learn_ref is not None:  # finish the update in progress so the checkpoint includes it
            self._on_learned(ray.get(self.learn_ref), start)

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
            self.log.warning("reward failure (recorded as 0): %s", err)
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
            **self.feeder_totals(),
        }
        self._record(m)
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
        return super().checkpoint()
