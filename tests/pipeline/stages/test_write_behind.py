"""The stages' tables hold writes until a commit: fewer changelog records, nothing lost in a crash.

A real worker on the real broker. A trajectory of many steps arrives in one burst; the worker emits it
and is killed right away (it commits every 5 s here, so what it held back has most likely not reached
the changelogs). The restarted worker reads the uncommitted records again and rebuilds the same state:
a later reward makes version 2 with every step and both rewards. Then, with the writes flushed at a commit,
the join-state changelog holds a handful of records for the trajectory, not one per event.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from infra.broker import LocalBroker
from pipeline.stages.names import changelog_topics
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
    write_config,
)

pytestmark = pytest.mark.slow

STEPS = 30


def step(*args: Any, **kwargs: Any) -> StepEvent:
    return _step(*args, created_at=utcnow(), **kwargs)


def versions(values: list[bytes], tid: str) -> dict[int, Trajectory]:
    return {t.version: t for t in versions_inline(values) if t.trajectory_id == tid}


def test_held_writes_survive_a_crash_and_reach_the_changelog_once(broker: LocalBroker, tmp_path: Any) -> None:
    cfg = make_config(
        broker,
        tmp_path,
        rewards={"required": ["score"], "wait_s": 60, "idle_end_s": 120, "tick_s": 0.5, "combine": "mean"},
        eligibility={"tenants": {"acme": {"training_opt_in": True}}},
        stages={"commit_interval_s": 5.0},
    )
    create_topics(cfg.broker, cfg.topics)
    config_file = write_config(cfg, tmp_path / "sluice.yaml")
    worker = StageWorker(config_file, tmp_path / "stages.log").start()
    audited = TopicTail(cfg, cfg.topics.name("trajectories_audited"))
    p = producer(cfg)
    tid = "burst"
    try:
        for i in range(STEPS):
            send(p, cfg, "steps_raw", step(tid, i))
        send(p, cfg, "steps_raw", end(tid))
        send(p, cfg, "rewards_raw", reward_event(tid, value=0.5))
        p.flush()
        audited.wait_until(lambda values: 1 in versions(values, tid), timeout_s=60)
        worker.kill()  # within the commit interval: the held writes die with the worker

        worker = StageWorker(config_file, tmp_path / "stages.log").start()
        send(p, cfg, "rewards_raw", reward_event(tid, value=1.0))
        p.flush()
        audited.wait_until(lambda values: 2 in versions(values, tid), timeout_s=90)
        v2 = versions(audited.values(), tid)[2]
        assert [s.step_index for s in v2.steps] == list(range(STEPS))
        assert v2.reward == pytest.approx(0.75)  # both rewards joined: the first one was not lost

        time.sleep(cfg.stages.commit_interval_s + 1.5)  # a commit has run since: the held writes are sent
        state_topic = next(
            t for t in changelog_topics(cfg.topics, cfg.stages) if t.endswith("join_state-changelog")
        )
        tail = TopicTail(cfg, state_topic)
        tail.drain(quiet_s=2.0, timeout_s=30)
        writes = [k for t, k, _ in tail.records if t == state_topic and k is not None and tid.encode() in k]
        tail.close()
        # the worker wrote the state on each of its 2 * (STEPS + 2) + 1 events; the changelog got a few
        assert 1 <= len(writes) <= 6, len(writes)
    finally:
        audited.close()
        worker.stop()
