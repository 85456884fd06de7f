"""Assembly of emitted versions: order, tool results, step rewards, governance envelope, drop envelope."""

from __future__ import annotations

from datetime import timedelta

from governance.config import EligibilityPolicy, ReplayConfig, RewardJoinConfig, TenantPolicy
from governance.reward_join import apply_end, apply_reward, apply_step, build_emission, plan_emission
from sluice.events import FeedbackSignal, ToolCall, decode, encode
from tests.governance.event_builders import T0, end, governance, metadata, reward_event, step

CFG = RewardJoinConfig(required=["score"], combine="mean")
POLICY = EligibilityPolicy(tenants={"acme": TenantPolicy(training_opt_in=True, retention_days=90)})
REPLAY = ReplayConfig()


def run(events, now=10.0):
    state, steps = None, {}
    for e in events:
        if e.event_type == "step":
            tr = apply_step(state, e, 1.0, CFG, POLICY)
            if tr.store_step:
                steps[e.event_id] = e
        elif e.event_type == "reward":
            tr = apply_reward(state, e, 1.0, CFG)
        else:
            tr = apply_end(state, e, 1.0, POLICY)
        state = tr.state
    plan = plan_emission(state, CFG, now)
    assert plan is not None
    stored = [steps[i] for i in state.stored_step_ids]
    return build_emission(state, stored, plan, CFG, POLICY, REPLAY, now)


def tool_step(index, calls=(), answers=()):
    return step(
        index=index,
        tool_calls=[ToolCall(id=cid, name=name, arguments="{}") for cid, name in calls] or None,
        tool_answers=list(answers),
        meta=metadata(tool_versions={"search": "2.1"}),
    )


def test_tool_results_attach_to_the_asking_step() -> None:
    events = [
        tool_step(0, calls=[("c1", "search"), ("c2", "search")]),
        tool_step(1, answers=[("c1", "result one")], calls=[("c3", "search")]),
        tool_step(2, answers=[("c2", "late result"), ("c3", "three")]),
        end(),
        reward_event(),
    ]
    traj = run(events).trajectory
    s0, s1, s2 = traj.steps
    assert [(t.tool_call_id, t.content, t.tool_version) for t in s0.action_result.tool_results] == [
        ("c1", "result one", "2.1"),
        ("c2", "late result", "2.1"),
    ]
    assert [t.tool_call_id for t in s1.action_result.tool_results] == ["c3"]
    assert s2.action_result.tool_results == []


def test_steps_in_index_order_and_stable_version_identity() -> None:
    e = run([step(index=1), step(index=0), end(), reward_event()])
    assert [s.step_index for s in e.trajectory.steps] == [0, 1]
    assert e.trajectory.event_id == "traj-1:v1"
    assert e.trajectory.version == 1
    assert e.trajectory.first_step_at == T0


def test_step_level_rewards_stay_on_their_step() -> None:
    s0 = step(index=0)
    s0.action_result.feedback = [FeedbackSignal(kind="edit", at=T0)]
    events = [
        s0,
        step(index=1),
        reward_event(name="score", value=1.0),
        reward_event(name="helpful", value=0.0, step_index=1),
        reward_event(name="orphan", value=0.3, step_index=7),
        end(),
    ]
    traj = run(events).trajectory
    assert [(r.name, r.value) for r in traj.steps[0].rewards] == [("edit", 0.5)]
    assert [(r.name, r.value) for r in traj.steps[1].rewards] == [("helpful", 0.0)]
    assert sorted(r.name for r in traj.rewards) == ["orphan", "score"]
    assert traj.reward == 1.0  # trajectory-level rewards only (mean of [1.0])


def test_governance_envelope_and_train_routing() -> None:
    e = run([step(gov=governance(residual=0)), step(index=1), end(), reward_event(value=0.5)])
    gov = e.trajectory.governance
    assert gov.redaction == "redacted"
    assert gov.eligibility.decision == "train"
    assert gov.replay.grade == "deterministic"
    assert gov.consent.training is True
    assert gov.retention_deadline == T0 + timedelta(days=90)
    assert e.trajectory.rewarded and e.trajectory.reward == 0.5
    assert e.to_train and e.trajectory.train_blockers == []


def test_unrewarded_or_ineligible_stays_off_train() -> None:
    unrewarded = run([step(), end()], now=1e6)
    assert unrewarded.trajectory.rewarded is False
    assert unrewarded.train_blockers == ["unrewarded"]
    assert unrewarded.trajectory.train_blockers == ["unrewarded"]  # the decision travels with the record
    assert decode(encode(unrewarded.trajectory)).train_blockers == ["unrewarded"]
    audit = run([step(tenant="globex"), end(tenant="globex"), reward_event(tenant="globex")])
    assert audit.train_blockers == ["eligibility:audit_only"]
    assert audit.trajectory.steps  # audit_only keeps the (redacted) content


def test_dropped_trajectory_keeps_only_the_envelope() -> None:
    e = run(
        [step(), step(index=1, gov=governance(data_class="prohibited")), reward_event(critique="x"), end()]
    )
    traj = e.trajectory
    assert traj.steps == [] and traj.rewards == [] and traj.reward is None
    assert traj.governance.eligibility.decision == "drop"
    assert traj.governance.eligibility.reasons == ["data_class_dropped:prohibited"]
    assert traj.governance.data_class == "prohibited"
    assert traj.governance.replay.reasons == ["content_dropped"]
    assert not e.to_train
