"""A weights canary is decided by the task's grader, not by the rewards the traffic posts: on a real store,
a candidate version whose answers are wrong but whose posted rewards were gamed to 1 is rolled back when
graded, and would have been promoted on the posted rewards; a trajectory's arm is the version its steps
recorded. The reward audit turns down, before any request is served, a candidate whose training rewards the
checker disagrees with."""

from __future__ import annotations

from datetime import timedelta

from governance.evolve.reward_audit import RewardAuditConfig
from pipeline.evolve.graders import per_task_grader
from pipeline.evolve.loop_config import CanaryConfig
from pipeline.evolve.weights import audit_rewards, line_items, read_policy_canary, scope_items
from sinks.clients import connect_client
from sluice.events import utcnow
from sluice.evolution import LineageItem, OverlayAssignment, PolicyLineage
from tests.pipeline.evolve.conftest import World
from tests.pipeline.evolve.world import QUESTIONS, TASK, TENANT, step, trajectory
from trainers.live.lineage import weights_proposal

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


def answered(prefix: str, n: int, posted_when_right: float) -> list:
    """``n`` right and ``n`` wrong one-call answers, rewarded ``posted_when_right`` when right and the
    opposite when wrong."""
    start, out = utcnow(), []
    for i in range(n):
        for right in (True, False):
            q, ref, _ = QUESTIONS[i % len(QUESTIONS)]
            tid = f"{prefix}-{'right' if right else 'wrong'}-{i}"
            s = step(
                tid, q, ref, ref if right else "I am not sure.", at=start + timedelta(milliseconds=10 * i)
            )
            posted = posted_when_right if right else 1.0 - posted_when_right
            out.append(trajectory(tid, [s], posted, "deterministic", start))
    return out


def lineage_items(trajectories: list, source: str) -> list[LineageItem]:
    """What a candidate trained on ``trajectories`` records of them: the rewards posted, from ``source``."""
    return [
        LineageItem(trajectory_id=t.trajectory_id, version=0, tenant=TENANT, reward=t.reward,
                    reward_sources=[source])
        for t in trajectories
    ]  # fmt: skip


def test_the_audit_sample_reaches_back_through_the_line() -> None:
    items = lineage_items(answered("line", 6, 1.0), "checker")  # 12 items
    parent = PolicyLineage(version="acme.3", parent="acme.1", scope=TENANT, items=items[:8])
    grand = PolicyLineage(version="acme.1", parent="0", scope=TENANT, items=[])
    child = weights_proposal(PolicyLineage(version="acme.5", parent="acme.3", scope=TENANT, items=items[8:]))
    got = line_items(child, {"acme.3": parent, "acme.1": grand}, 10)
    assert [i.trajectory_id for i in got] == [i.trajectory_id for i in items[8:][::-1] + items[:8][::-1][:6]]
    assert len(line_items(child, {}, 10)) == 4  # an unknown parent ends the walk


def test_the_reward_audit_turns_down_a_candidate_trained_on_rewards_the_checker_disagrees_with(
    world: World,
) -> None:
    gamed, honest = answered("audit-gamed", 12, 0.0), answered("audit-honest", 12, 1.0)
    world.ingest(gamed + honest)
    grader, canary = per_task_grader(world.cfg.evolve), CanaryConfig()
    cfg = RewardAuditConfig(min_rows=8)
    client = connect_client(world.cfg.sink_settings(), None)
    try:
        bad = audit_rewards(client, lineage_items(gamed, "gamed-grader"), TENANT, grader, canary, cfg)
        assert not bad.passed and bad.numbers["graded"] == 24, bad.summary
        assert bad.numbers["agreement"] == 0.0 and "'gamed-grader'" in bad.summary
        good = audit_rewards(client, lineage_items(honest, "checker"), TENANT, grader, canary, cfg)
        assert good.passed and good.numbers["agreement"] == 1.0, good.summary
        few = audit_rewards(client, lineage_items(gamed[:3], "gamed-grader"), TENANT, grader, canary, cfg)
        assert few.decision == "wait" and few.numbers["graded"] == 3 and "need 8" in few.summary
    finally:
        client.close()


def test_the_audit_also_judges_the_source_on_the_scope_traffic_it_rewards(world: World) -> None:
    """Rows training kept can agree with the checker while the source rewards the scope's traffic wrongly:
    the scope's newest rewarded trajectories join the sample."""
    kept = answered("scope-kept", 8, 1.0)  # what the line trained on: rewarded as the checker would
    world.ingest(kept)
    gamed = answered("scope-gamed", 12, 0.0)  # the scope's newest traffic, rewarded against the checker
    world.ingest(gamed)
    grader, canary = per_task_grader(world.cfg.evolve), CanaryConfig()
    cfg = RewardAuditConfig(min_rows=8, scope_sample=24)
    items = lineage_items(kept, "gamed-grader")
    p = weights_proposal(PolicyLineage(version="acme.9", parent="acme.5", scope=TENANT, items=items))
    client = connect_client(world.cfg.sink_settings(), None)
    try:
        alone = audit_rewards(client, items, TENANT, grader, canary, cfg)
        assert alone.passed and alone.numbers["agreement"] == 1.0, alone.summary
        scope = scope_items(client, p, cfg.scope_sample, {i.trajectory_id for i in items})
        assert {i.trajectory_id for i in scope} == {t.trajectory_id for t in gamed}
        both = audit_rewards(client, items + scope, TENANT, grader, canary, cfg)
        assert not both.passed and both.numbers["graded"] == 40, both.summary
        assert both.numbers["by_source"]["posted to the scope"]["agreement"] == 0.0
    finally:
        client.close()
