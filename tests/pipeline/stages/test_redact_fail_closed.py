"""Fail closed through a real stage worker: redaction that times out publishes the step withheld.

The worker runs with ``redaction.step_timeout_s`` far below what any step takes, so every step's
redaction times out. Each step still reaches the redacted topic — with no text, its failure in the
redaction report — the raw record goes to the dead-letter topic, and the trajectory is emitted to the
audited topic as ``audit_only`` with the reason ``redaction_failed:timeout``; nothing reaches training.
"""

from __future__ import annotations

import pytest

from infra.broker import LocalBroker, free_port
from pipeline.topics import create_topics
from sluice.events import DeadLetter, StepEvent, Trajectory, decode, utcnow
from tests.conftest import make_config
from tests.governance.event_builders import end, step
from tests.pipeline.stages.stage_helpers import StageWorker, TopicTail, producer, send, write_config

pytestmark = pytest.mark.slow
CANARY = "canary.failclosed@example.com"


def test_timed_out_redaction_is_withheld_and_never_trained_on(
    broker: LocalBroker, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("fail-closed")
    cfg = make_config(
        broker,
        tmp,
        redaction={"step_timeout_s": 1e-9},
        rewards={"required": [], "wait_s": 1, "idle_end_s": 30, "tick_s": 0.5},
        eligibility={"tenants": {"acme": {"training_opt_in": True}}},
        stages={"web_port": free_port()},
    )
    create_topics(cfg.broker, cfg.topics)
    worker = StageWorker(write_config(cfg, tmp / "sluice.yaml"), tmp / "stages.log").start()
    names = [
        cfg.topics.name(t)
        for t in ("steps_redacted", "trajectories_audited", "trajectories_train", "deadletter")
    ]
    tail = TopicTail(cfg, *names)
    try:
        p = producer(cfg)
        for i in range(2):
            send(p, cfg, "steps_raw", step("fc", i, text=f"mail {CANARY}", created_at=utcnow()))
        send(p, cfg, "steps_raw", end("fc"))
        p.flush()
        tail.wait_until(lambda values: any(b'"event_id":"fc:v1"' in v for v in values), timeout_s=90)
        tail.poll(2.0)
        redacted = [decode(v) for v in tail.values(names[0])]
        steps = [e for e in redacted if isinstance(e, StepEvent)]
        assert len(steps) == 2
        assert all(s.governance.redaction_report.failure == "timeout" for s in steps)
        audited = [decode(v) for v in tail.values(names[1])]
        traj = next(t for t in audited if isinstance(t, Trajectory) and t.trajectory_id == "fc")
        assert traj.governance.eligibility.decision == "audit_only"
        assert "redaction_failed:timeout" in traj.governance.eligibility.reasons
        assert tail.values(names[2]) == []
        letters = [decode(v) for v in tail.values(names[3])]
        assert sum(isinstance(d, DeadLetter) and d.stage == "redact" for d in letters) >= 2
        for topic in names[:3]:
            assert all(CANARY.encode() not in v for v in tail.values(topic)), topic
    finally:
        tail.close()
        worker.stop()
