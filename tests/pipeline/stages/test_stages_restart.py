"""Scale-out and crash recovery: two workers share the partitions (same app id = same consumer group);
one is killed with SIGKILL mid-stream, the other takes over its partitions (tables recovered from the
changelogs into a data directory that never had them), the killed one is restarted and gets partitions
back. Every trajectory must come out, each with every one of its steps, rewarded or (by the timer) not."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from infra.broker import LocalBroker
from pipeline.topics import create_topics
from sluice.events import StepEvent, Trajectory, utcnow
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


def step(*args: Any, **kwargs: Any) -> StepEvent:
    """A step created now: the worker judges retention by its own clock."""
    return _step(*args, created_at=utcnow(), **kwargs)


STEPS = 4


def produce_trajectories(cfg, tids: list[str], pause_s: float = 0.0) -> None:
    p = producer(cfg)
    for tid in tids:
        if not tid.startswith("unrewarded"):
            send(p, cfg, "rewards_raw", reward_event(tid, value=1.0))  # before the steps: an early reward
        for i in range(STEPS):
            send(p, cfg, "steps_raw", step(tid, i, text=f"step {i} of {tid}, mail {tid}@example.com"))
        send(p, cfg, "steps_raw", end(tid))
        p.flush()
        time.sleep(pause_s)


def latest(values: list[bytes]) -> dict[str, Trajectory]:
    out: dict[str, Trajectory] = {}
    for t in versions_inline(values):
        if t.trajectory_id not in out or t.version > out[t.trajectory_id].version:
            out[t.trajectory_id] = t
    return out


def learned(t: Trajectory) -> tuple[frozenset[str], bool]:
    """What a version knows: its steps and whether its rewards were complete."""
    return frozenset(s.event_id for s in t.steps), t.rewarded


def assert_versions_only_add(values: list[bytes], want: set[str]) -> None:
    """Duplicates from at-least-once delivery reuse their version's identity (``{id}:v{n}``); a new version
    exists only because the trajectory learned something after the previous one was emitted (the crash
    can hold a reward back past ``wait_s``: then v1 is unrewarded and v2 rewarded). Never a version
    that repeats or loses what an earlier one had."""
    versions: dict[str, dict[int, Trajectory]] = {}
    for t in versions_inline(values):
        assert t.event_id == f"{t.trajectory_id}:v{t.version}"
        versions.setdefault(t.trajectory_id, {})[t.version] = t
    assert set(versions) == want
    for tid, by_version in versions.items():
        assert sorted(by_version) == list(range(1, len(by_version) + 1)), tid
        for n in range(2, len(by_version) + 1):
            (old_steps, old_rewarded), (steps, rewarded) = learned(by_version[n - 1]), learned(by_version[n])
            assert old_steps <= steps and old_rewarded <= rewarded, (tid, n)
            assert (old_steps, old_rewarded) != (steps, rewarded), f"{tid} v{n} repeats v{n - 1}"


def test_kill_restart_and_rebalance_lose_nothing(broker: LocalBroker, tmp_path: Path) -> None:
    cfg = make_config(
        broker,
        tmp_path,
        rewards={"required": ["score"], "wait_s": 3, "idle_end_s": 60, "tick_s": 0.5},
        eligibility={"tenants": {"acme": {"training_opt_in": True}}},
    )
    create_topics(cfg.broker, cfg.topics)
    config_file = write_config(cfg, tmp_path / "sluice.yaml")
    a = StageWorker(config_file, tmp_path / "worker-a.log")
    b = StageWorker(config_file, tmp_path / "worker-b.log")
    audited = TopicTail(cfg, cfg.topics.name("trajectories_audited"))
    # unrewarded ones are emitted by the timer (wait_s after their end): ticks must reach their owner
    first = [f"crash-{i:02d}" if i % 8 else f"unrewarded-{i:02d}" for i in range(40)]
    second = [f"after-{i:02d}" for i in range(10)]
    try:
        a.launch()
        a.wait_for_log("slot=0", 120)  # a holds data slot 0 before b looks for a free one
        b.launch()
        wait_one_partition_each(a, b)  # the group rebalanced: one partition each
        feeder = threading.Thread(target=produce_trajectories, args=(cfg, first, 0.1))
        feeder.start()
        audited.wait_until(lambda values: len(values) >= 3, timeout_s=60)
        a.kill()  # mid-stream: the feeder is still producing
        feeder.join()
        a.start()  # same data slot as before (its lock died with it)
        produce_trajectories(cfg, second)
        want = set(first) | set(second)
        audited.wait_until(lambda values: set(latest(values)) >= want, timeout_s=120)
        audited.poll(1.0)
        got = latest(audited.values())
        for tid in want:
            traj = got[tid]
            assert [s.step_index for s in traj.steps] == list(range(STEPS)), tid
            rewarded = not tid.startswith("unrewarded")
            assert (traj.rewarded, traj.reward) == (rewarded, 1.0 if rewarded else None), tid
            assert "<EMAIL_ADDRESS_1>" in traj.steps[0].observation.messages[-1].content
        assert_versions_only_add(audited.values(), want)
        assert "slot=0" in a.log_text()
        assert b.terminate() == 0 and a.terminate() == 0
    finally:
        audited.close()
        a.stop()
        b.stop()
