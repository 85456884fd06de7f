"""Rewards posted around a trajectory's end survive stage-worker rebalances.

Two workers share the partitions of their own broker while trajectories stream in, each one's reward
sent just before its end (on the rewards topic, while the steps and the end go on the steps topic).
Mid-stream the group rebalances, once per test: one worker is killed with SIGKILL and started again
(the survivor takes over, then gives a partition back), or the broker is frozen (SIGSTOP) for longer
than the session timeout, so every member's session expires and the group re-forms. Afterwards every
trajectory's latest audited version must hold each of its steps and its reward: a record that was
fetched but not processed when the rebalance came must be processed after it, never skipped.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import SluiceConfig
from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sluice.events import StepEvent, decode, utcnow
from tests.conftest import make_config
from tests.governance.event_builders import end, reward_event
from tests.governance.event_builders import step as _step
from tests.pipeline.stages.stage_helpers import (
    StageWorker,
    TopicTail,
    producer,
    send,
    versions_inline,
    wait_one_partition_each,
    write_config,
)

pytestmark = pytest.mark.slow

STEPS = 3
RATE_PER_S = 8  # trajectories per second, for the whole run
FEED_S = 14.0


def step(*args: Any, **kwargs: Any) -> StepEvent:
    return _step(*args, created_at=utcnow(), **kwargs)


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """A broker of this test alone: freezing it must not stall the other tests' broker."""
    with LocalBroker(log_path=tmp_path / "tansu.log") as b:
        yield b


def feed(cfg: SluiceConfig, prefix: str, stop: threading.Event, sent: list[str]) -> None:
    """Trajectories at a steady rate until ``stop``: steps, then the reward, then at once the end."""
    p = producer(cfg)
    n = 0
    started = time.monotonic()
    while not stop.is_set() and time.monotonic() - started < FEED_S:
        tid = f"{prefix}-{n:04d}"
        for i in range(STEPS):
            send(p, cfg, "steps_raw", step(tid, i, text=f"step {i} of {tid}"))
        send(p, cfg, "rewards_raw", reward_event(tid, value=1.0, reward_id=f"{tid}-r"))
        send(p, cfg, "steps_raw", end(tid))
        p.poll(0)
        sent.append(tid)
        n += 1
        time.sleep(max(0.0, started + n / RATE_PER_S - time.monotonic()))
    assert p.flush(30) == 0


def whole(values: list[bytes]) -> set[str]:
    """Trajectories of which some version holds every step and its reward."""
    out = set()
    for t in versions_inline(values):
        if [s.step_index for s in t.steps] == list(range(STEPS)) and [r.reward_id for r in t.rewards] == [
            f"{t.trajectory_id}-r"
        ]:
            out.add(t.trajectory_id)
    return out


def where_records_are(cfg: SluiceConfig, tids: list[str]) -> str:
    """Where the records of ``tids`` sit (topic, partition, offset, kind), and the group's committed
    offsets: which hop a missing record stopped at."""
    from confluent_kafka import Consumer, TopicPartition

    from pipeline.stages.names import app_id

    topics = [cfg.topics.name(t) for t in ("steps_raw", "rewards_raw", "steps_redacted")]
    keys = {t.encode() for t in tids}
    c = Consumer(cfg.broker.consumer_config(f"test-diag-{time.monotonic_ns()}"))
    c.subscribe(topics)
    found: list[str] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        if msg.key() in keys:
            event = decode(msg.value())
            kind = type(event).__name__ + (f"#{event.step_index}" if isinstance(event, StepEvent) else "")
            found.append(f"{msg.topic()}[{msg.partition()}]@{msg.offset()} {msg.key().decode()} {kind}")
    c.close()
    group = Consumer(
        {**cfg.broker.consumer_config(app_id(cfg.topics, cfg.stages)), "enable.auto.commit": False}
    )
    tps = [TopicPartition(t, p) for t in topics for p in range(cfg.topics.partitions)]
    committed = {f"{tp.topic}[{tp.partition}]": tp.offset for tp in group.committed(tps, timeout=10)}
    group.close()
    return "\n".join(sorted(found)) + f"\ncommitted: {committed}"


def worker_notes(tmp_path: Path) -> str:
    """Each worker's assignments, rebalances and warnings (what its consumer saw), for a failure message."""
    marks = ("WARNING", "assigned", "Revoking", "ready")
    lines = []
    for log_file in sorted(tmp_path.glob("worker-*.log")):
        text = log_file.read_text(errors="replace").splitlines()
        lines += [f"{log_file.name}: {line[:240]}" for line in text if any(m in line for m in marks)][-40:]
    return "\n".join(lines)


def run_with_fault(broker: LocalBroker, tmp_path: Path, fault: str) -> None:
    cfg = make_config(
        broker,
        tmp_path,
        rewards={"wait_s": 2, "idle_end_s": 60, "tick_s": 0.5},
        eligibility={"tenants": {"acme": {"training_opt_in": True}}},
    )
    create_topics(cfg.broker, cfg.topics)
    config_file = write_config(cfg, tmp_path / "sluice.yaml")
    a = StageWorker(config_file, tmp_path / "worker-a.log")
    b = StageWorker(config_file, tmp_path / "worker-b.log")
    audited = TopicTail(cfg, cfg.topics.name("trajectories_audited"))
    sent: list[str] = []
    stop = threading.Event()
    feeder = threading.Thread(target=feed, args=(cfg, fault, stop, sent))
    try:
        a.launch()  # both load at once and join the group together
        b.launch()
        wait_one_partition_each(a, b)
        feeder.start()
        audited.wait_until(lambda values: len(values) >= 10, timeout_s=60)
        if fault == "kill":
            b.kill()  # its partitions move to a, and back once it is started again
            time.sleep(1.0)
            b.start()
        else:
            pid = broker._proc.pid  # noqa: SLF001 - the broker process of this test
            session_s = cfg.broker.session_timeout_ms / 1000

            os.kill(pid, signal.SIGSTOP)
            time.sleep(session_s + 2.0)  # every member's session expires meanwhile
            os.kill(pid, signal.SIGCONT)
        feeder.join(60)
        want = set(sent)
        try:
            audited.wait_until(lambda values: whole(values) >= want, timeout_s=60)
        except TimeoutError:
            missing = sorted(want - whole(audited.values()))
            raise AssertionError(
                f"{len(missing)} of {len(want)} trajectories never had a version with every step and "
                f"their reward: {missing[:10]}\n{where_records_are(cfg, missing[:10])}\n{worker_notes(tmp_path)}"
            ) from None
    finally:
        stop.set()
        if feeder.is_alive():
            feeder.join(30)
        audited.close()
        a.stop()
        b.stop()


def test_rewards_survive_a_killed_worker(own_broker: LocalBroker, tmp_path: Path) -> None:
    run_with_fault(own_broker, tmp_path, "kill")


def test_rewards_survive_a_broker_freeze_past_the_session(own_broker: LocalBroker, tmp_path: Path) -> None:
    run_with_fault(own_broker, tmp_path, "pause")
