"""A weights canary is decided by the task's grader, not by the rewards the traffic posts: on a real store,
a candidate version whose answers are wrong but whose posted rewards were gamed to 1 is rolled back when
graded, and would have been promoted on the posted rewards; a trajectory's arm is the version its steps
recorded."""

from __future__ import annotations

from datetime import timedelta

from pipeline.evolve.graders import per_task_grader
from pipeline.evolve.loop_config import CanaryConfig
from pipeline.evolve.weights import read_policy_canary
from sinks.clients import connect_client
from sluice.events import utcnow
from sluice.evolution import OverlayAssignment
from tests.pipeline.evolve.conftest import World
from tests.pipeline.evolve.world import QUESTIONS, TASK, TENANT, step, trajectory

CONTROL, CANDIDATE = "acme.4", "acme.5"


def gamed_traffic(per_arm: int) -> list:
    """Control answers right and is rewarded 0; the candidate answers wrong and is rewarded 1 (a grader
    that pays whatever the answer says)."""
    start = utcnow()
    out = []
    for i in range(per_arm):
        for version, right, posted in ((CONTROL, True, 0.0), (CANDIDATE, False, 1.0)):
            at = start + timedelta(milliseconds=10 * i)
            q, ref, _ = QUESTIONS[i % len(QUESTIONS)]
            tid = f"gamed-{version}-{i}"
            s = step(tid, q, ref, ref if right else "I am not sure.", at=at)
            s = s.model_copy(update={"metadata": s.metadata.model_copy(update={"model_version": version})})
            out.append(trajectory(tid, [s], posted, "deterministic", at))
    return out


def test_the_grader_decides_a_weights_canary_and_a_gamed_reward_does_not(world: World) -> None:
    since = utcnow() - timedelta(seconds=1)
    world.ingest(gamed_traffic(30))
    canary = OverlayAssignment(
        tenant=TENANT, task_id=TASK, active_policy=CONTROL, candidate_policy=CANDIDATE, canary_share=0.5
    )
    cfg = CanaryConfig.model_validate({"share": 0.5, "test": {"alpha": 0.05, "tune_n": 30, "min_per_arm": 8}})
    client = connect_client(world.cfg.sink_settings(), None)
    try:
        graded, evidence = read_policy_canary(client, canary, since, cfg, per_task_grader(world.cfg.evolve))
        assert graded.decision == "rollback", graded.summary
        assert evidence.numbers["reward"] == "grader"
        assert evidence.numbers["candidate"]["graded"] == 30 and evidence.numbers["candidate"]["mean"] == 0.0
        assert evidence.numbers["control"]["mean"] == 1.0
        posted_cfg = cfg.model_copy(update={"weights_reward": "posted"})
        posted, ev = read_policy_canary(client, canary, since, posted_cfg, per_task_grader(world.cfg.evolve))
        assert ev.numbers["reward"] == "posted" and posted.decision == "promote", posted.summary
    finally:
        client.close()
