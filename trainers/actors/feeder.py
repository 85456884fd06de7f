"""Feeder: consumes the train topic and turns trajectories into training tasks, idempotently.

- Resumes from committed offsets (or the checkpoint's, which win): partitions are assigned explicitly, so
  there is no group-join wait; offsets are committed only at checkpoints, and only up to the oldest task
  not yet handed to a rollout worker (at-least-once transport).
- Idempotent by (trajectory id, version): a version at or below one already taken is skipped; a newer
  version of a task still waiting replaces it (the latest reward wins); a newer version of a task already
  trained becomes a new task. Never twice on the same (id, version).
- A tombstone (key = trajectory id, no value: the trajectory was erased) drops its pending task and
  refuses any later record of that id (a bounded set of erased ids); it is never dead-lettered.
- A record that is not a Trajectory goes to the dead-letter topic with the reason; a Trajectory that cannot
  become a task (no prompt, unknown model, prompt too long) is counted and skipped with a logged reason.
- Steps by reference (layout 2.0): a version's header names its steps, and their records come before it on
  the same partition, once per step. The feeder reads them from the topic into a step cache
  (``sluice.trajectory_refs.StepCache``, bounded by trajectories), never from the store: the train topic is
  what the join stage let through for training, so the trainer needs neither the sink up nor a credential
  that could read audit-only content. On start it warms the cache by reading step records (nothing else)
  up to ``STEP_WARMUP_RECORDS`` before each partition's resume offset, so a late version of a trajectory
  whose steps came before the restart still resolves. A version whose steps are not all held (evicted,
  or older than the warm-up) is never trained partially: it is skipped under the reason ``steps_missing``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, OrderedDict
from typing import Any

import torch
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from sluice.events import DeadLetter, Trajectory, TrajectoryStep, decode, encode
from sluice.step_refs import is_step_record_key, key_trajectory_id
from sluice.trajectory_refs import StepCache, StepsMissing
from trainers.exceptions import TaskError, TrainerError
from trainers.samples import TrainingTask
from trainers.settings import TrainerSettings
from trainers.task_builder import build_training_task
from trainers.tasks.registry import build_task

log = logging.getLogger("sluice.trainer.feeder")
STAGE = "trainer-feeder"
TAKEN_LIMIT = 200_000  # (id -> version) entries remembered across checkpoints
ERASED_LIMIT = 200_000  # erased trajectory ids remembered by this feeder
STEP_CACHE_TRAJECTORIES = 5_000  # trajectories whose step records the feeder holds (least recent evicted)
STEP_WARMUP_RECORDS = 200_000  # records read back per partition at start, for their step records only


class TaskFeeder:
    def __init__(
        self,
        cfg: TrainerSettings,
        tokenizer: Any,
        max_prompt_tokens: int,
        start_offsets: dict[int, int] | None = None,
        taken: dict[str, int] | None = None,
    ) -> None:
        torch.set_num_threads(1)
        self.cfg = cfg
        self.topic = cfg.topics.name("trajectories_train")
        self.task = build_task(cfg.trainer.task, cfg.trainer.reward_timeout_s)
        self.tokenizer = tokenizer
        self.max_prompt_tokens = max_prompt_tokens
        self.taken: OrderedDict[str, int] = OrderedDict(taken or {})
        self.pending: OrderedDict[str, TrainingTask] = OrderedDict()
        self.erased: OrderedDict[str, None] = OrderedDict()
        self.newly_erased: list[str] = []  # tombstones read since the last ``take_erased``
        self.counts: Counter[str] = Counter()
        self.skip_reasons: Counter[str] = Counter()
        self.consumer = Consumer(cfg.broker.consumer_config(cfg.trainer.consumer_group))
        self.producer: Producer | None = None
        self.steps = StepCache(STEP_CACHE_TRAJECTORIES)
        self.resume_at: dict[int, int] = {}
        self.next_offsets = self._assign(start_offsets or {})

    def _assign(self, start: dict[int, int]) -> dict[int, int]:
        md = self.consumer.list_topics(self.topic, timeout=10)
        meta = md.topics.get(self.topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise TrainerError(f"train topic {self.topic} does not exist (run `sluice topics create`)")
        parts = [TopicPartition(self.topic, p) for p in sorted(meta.partitions)]
        committed = self.consumer.committed(parts, timeout=10)
        offsets: dict[int, int] = {}
        for tp in committed:
            offsets[tp.partition] = start.get(tp.partition, tp.offset if tp.offset >= 0 else 0)
        read_from: dict[int, int] = {}
        for p, o in offsets.items():
            low, _ = self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)
            read_from[p] = min(o, max(low, o - STEP_WARMUP_RECORDS, 0))
        self.resume_at = dict(offsets)
        self.consumer.assign([TopicPartition(self.topic, p, o) for p, o in read_from.items()])
        log.info("feeder reading %s from offsets %s (step records from %s)", self.topic, offsets, read_from)
        return offsets

    # ----------------------------------------------------------------------------- consuming

    def take_erased(self) -> list[str]:
        """Trajectory ids erased (tombstones read) since the last call: the live trainer rebuilds the
        versions that trained on them."""
        out, self.newly_erased = self.newly_erased, []
        return out

    def take(self, n: int, timeout_s: float) -> tuple[list[TrainingTask], dict[str, Any]]:
        """Up to n tasks (waiting at most timeout_s for them) and the feeder's counters."""
        deadline = time.monotonic() + timeout_s
        while len(self.pending) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            msgs = self.consumer.consume(num_messages=max(n, 64), timeout=min(left, 0.2))
            for msg in msgs:
                self._ingest(msg)
            if not msgs and self.pending:
                break  # nothing more right now: hand out what there is
        out = []
        while self.pending and len(out) < n:
            _, task = self.pending.popitem(last=False)
            self._mark_taken(task)
            out.append(task)
        self.counts["tasks"] += len(out)
        return out, self.stats()

    def _ingest(self, msg: Message) -> None:
        if msg.error():
            if msg.error().code() != KafkaError._PARTITION_EOF:
                log.warning("consume error: %s", msg.error())
            return
        key = msg.key().decode(errors="replace") if msg.key() else ""
        if msg.offset() < self.resume_at.get(msg.partition(), 0):
            self._warm(key, msg.value())
            return
        self.next_offsets[msg.partition()] = msg.offset() + 1
        self.counts["records"] += 1
        if msg.value() is None:
            # a step record withdrawn (content dropped): its trajectory's cache goes
            if is_step_record_key(key):
                self.steps.drop(key_trajectory_id(key))
            else:
                self._erase(key)
            return
        try:
            event = decode(msg.value())
        except ValueError as err:
            self._dead_letter(msg, f"not a valid event: {str(err).splitlines()[0]}", type(err).__name__)
            return
        if isinstance(event, TrajectoryStep):
            self.counts["step_records"] += 1
            if event.trajectory_id not in self.erased:
                self.steps.add(event)
            return
        if not isinstance(event, Trajectory):
            self._dead_letter(msg, f"expected a trajectory, got {event.event_type}", "WrongEventType")
            return
        self._offer(event, msg.partition(), msg.offset())

    def _warm(self, key: str, value: bytes | None) -> None:
        """A record before the resume offset, read back at start: only its step records are kept."""
        if value is None:
            self.steps.drop(key_trajectory_id(key))
        elif is_step_record_key(key):
            try:
                event = decode(value)
            except ValueError:
                return  # dead-lettered when it was first read
            if isinstance(event, TrajectoryStep):
                self.steps.add(event)

    def _erase(self, tid: str) -> None:
        """A tombstone: the trajectory was erased. Drop its waiting task; refuse it from now on."""
        self.counts["tombstones"] += 1
        self.steps.drop(tid)
        if self.pending.pop(tid, None) is not None:
            self.counts["erased_pending"] += 1
        self.erased[tid] = None
        self.erased.move_to_end(tid)
        self.newly_erased.append(tid)
        del self.newly_erased[:-ERASED_LIMIT]
        while len(self.erased) > ERASED_LIMIT:
            self.erased.popitem(last=False)

    def _offer(self, traj: Trajectory, partition: int, offset: int) -> None:
        tid, version = traj.trajectory_id, traj.version
        if tid in self.erased:
            self.counts["erased_refused"] += 1
            return
        waiting = self.pending.get(tid)
        if version <= self.taken.get(tid, 0) or (waiting is not None and waiting.version >= version):
            self.counts["duplicates"] += 1
            return
        try:
            traj = self.steps.resolve(traj)
        except StepsMissing as err:  # never a partial trajectory
            self.counts["skipped"] += 1
            self.skip_reasons["steps_missing"] += 1
            log.warning("skipped trajectory %s v%d: %s", tid, version, err)
            return
        try:
            task = self._build(traj)
        except TaskError as err:
            self.counts["skipped"] += 1
            self.skip_reasons[err.code] += 1
            log.warning("skipped trajectory %s v%d: %s", tid, version, err)
            return
        task.topic, task.partition, task.offset = self.topic, partition, offset
        if waiting is not None:
            self.counts["superseded"] += 1  # a newer version arrived before the old one was trained
            del self.pending[tid]
        self.pending[tid] = task

    def _build(self, traj: Trajectory) -> TrainingTask:
        """The task of one trajectory version; raises ``TaskError`` with the reason it cannot be one."""
        return build_training_task(
            traj, self.task, self.tokenizer, self.cfg.trainer.models, self.max_prompt_tokens
        )

    def _mark_taken(self, task: TrainingTask) -> None:
        self.taken[task.trajectory_id] = task.version
        self.taken.move_to_end(task.trajectory_id)
        while len(self.taken) > TAKEN_LIMIT:
            self.taken.popitem(last=False)

    def _dead_letter(self, msg: Message, reason: str, error_type: str) -> None:
        self.counts["dead_letters"] += 1
        log.warning("dead-lettered %s[%d]@%d: %s", msg.topic(), msg.partition(), msg.offset(), reason)
        if self.producer is None:
            self.producer = Producer(self.cfg.broker.producer_config())
        key = msg.key().decode(errors="replace") if msg.key() else None
        dl = DeadLetter.of(
            STAGE,
            reason,
            error_type,
            source_topic=msg.topic(),
            source_partition=msg.partition(),
            source_offset=msg.offset(),
            key=key,
            original=msg.value(),
        )
        self.producer.produce(self.cfg.topics.name("deadletter"), key=key, value=encode(dl))
        self.producer.poll(0)

    # ----------------------------------------------------------------------------- offsets and state

    def safe_offsets(self) -> dict[int, int]:
        """Per partition: everything below this offset was handed out, superseded or skipped."""
        safe = dict(self.next_offsets)
        for task in self.pending.values():
            safe[task.partition] = min(safe.get(task.partition, task.offset), task.offset)
        return safe

    def checkpoint(self, untrained: list[tuple[str, int, int, int]]) -> tuple[dict[int, int], dict[str, int]]:
        """Commit offsets that are safe given the tasks handed out but not trained yet
        (``(trajectory_id, version, partition, offset)``), and return them with the taken versions minus
        those tasks, for trainer_state.json: after a crash, exactly the untrained tasks are read again."""
        safe = self.safe_offsets()
        taken = dict(self.taken)
        for tid, version, partition, offset in untrained:
            safe[partition] = min(safe.get(partition, offset), offset)
            if taken.get(tid) == version:
                if version > 1:
                    taken[tid] = version - 1
                else:
                    del taken[tid]
        if self.producer is not None:
            self.producer.flush(10)
        self.consumer.commit(
            offsets=[TopicPartition(self.topic, p, o) for p, o in safe.items()], asynchronous=False
        )
        return safe, taken

    def stats(self) -> dict[str, Any]:
        return {**self.counts, "pending": len(self.pending), "skip_reasons": dict(self.skip_reasons)}

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(10)
        self.consumer.close()
