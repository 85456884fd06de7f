"""Emission rules with an injected clock: end, required rewards, wait, idle end, versions, expiry."""

from __future__ import annotations

from governance.config import EligibilityPolicy, RewardJoinConfig, TenantPolicy
from governance.reward_join import (
    apply_end,
    apply_reward,
    apply_step,
    is_expired,
    is_orphaned,
    mark_emitted,
    next_due_at,
    plan_emission,
)
from governance.reward_join.state import JoinState
from tests.governance.event_builders import end, governance, reward_event, step

CFG = RewardJoinConfig(
    required=["score"], wait_s=100, idle_end_s=1000, keep_emitted_s=5000, orphan_ttl_s=7000
)
POLICY = EligibilityPolicy(tenants={"acme": TenantPolicy(training_opt_in=True)})


def emitted(state: JoinState, version: int, now: float) -> JoinState:
    return state.model_copy(update={"emitted_version": version, "emitted_at": now, "dirty": False})


def test_not_before_end_then_immediately_when_rewards_complete() -> None:
    s = apply_step(None, step(), 10.0, CFG, POLICY).state
    s = apply_reward(s, reward_event(), 11.0, CFG).state
    assert plan_emission(s, CFG, 12.0) is None  # not ended: no end event, not idle
    assert next_due_at(s, CFG) == 10.0 + 1000  # idle end, rewards already complete
    s = apply_end(s, end(), 20.0, POLICY).state
    plan = plan_emission(s, CFG, 20.0)
    assert plan is not None
    assert (plan.version, plan.status, plan.rewarded, plan.cause) == (1, "ended", True, "rewards_complete")


def test_unrewarded_after_wait_then_late_reward_makes_version_2() -> None:
    s = apply_step(None, step(), 0.0, CFG, POLICY).state
    s = apply_end(s, end(), 5.0, POLICY).state
    assert plan_emission(s, CFG, 50.0) is None
    assert next_due_at(s, CFG) == 105.0
    plan = plan_emission(s, CFG, 105.0)
    assert plan is not None and (plan.version, plan.rewarded, plan.cause) == (1, False, "wait_elapsed")
    s = emitted(s, 1, 105.0)
    assert plan_emission(s, CFG, 106.0) is None  # idempotent: nothing changed
    assert next_due_at(s, CFG) == 105.0 + 5000  # expiry
    s = apply_reward(s, reward_event(), 200.0, CFG).state
    plan = plan_emission(s, CFG, 200.0)
    assert plan is not None and (plan.version, plan.rewarded) == (2, True)


def test_idle_end_times_out() -> None:
    s = apply_step(None, step(), 0.0, CFG, POLICY).state
    s = apply_step(s, step(index=1), 500.0, CFG, POLICY).state
    assert plan_emission(s, CFG, 1499.0) is None
    assert next_due_at(s, CFG) == 1500.0 + 100  # idle end + wait (score missing)
    plan = plan_emission(s, CFG, 1600.0)
    assert plan is not None and (plan.status, plan.rewarded) == ("timed_out", False)


def test_no_required_rewards_emits_at_end() -> None:
    cfg = CFG.model_copy(update={"required": []})
    s = apply_step(None, step(), 0.0, cfg, POLICY).state
    s = apply_end(s, end(), 1.0, POLICY).state
    plan = plan_emission(s, cfg, 1.0)
    assert plan is not None and plan.rewarded is False
    s = apply_reward(s, reward_event(name="other"), 0.5, cfg).state
    assert plan_emission(s, cfg, 1.0).rewarded is True


def test_early_reward_before_any_step() -> None:
    s = apply_reward(None, reward_event(), 0.0, CFG).state
    assert plan_emission(s, CFG, 1e9) is None  # no step: nothing to emit
    assert next_due_at(s, CFG) == 7000.0
    assert is_orphaned(s, CFG, 7000.0) and not is_orphaned(s, CFG, 6999.0)
    s = apply_step(s, step(), 1.0, CFG, POLICY).state
    s = apply_end(s, end(), 2.0, POLICY).state
    plan = plan_emission(s, CFG, 2.0)
    assert plan is not None and plan.rewarded
    assert not is_orphaned(s, CFG, 1e9)


def test_expiry_only_when_emitted_and_unchanged() -> None:
    s = apply_step(None, step(), 0.0, CFG, POLICY).state
    s = apply_end(s, end(), 0.0, POLICY).state
    assert not is_expired(s, CFG, 1e9)
    s = emitted(s, 1, 100.0)
    assert not is_expired(s, CFG, 5099.0)
    assert is_expired(s, CFG, 5100.0)


def test_dropped_trajectory_is_emitted_once_at_end_without_waiting() -> None:
    s = apply_step(None, step(gov=governance(data_class="prohibited")), 0.0, CFG, POLICY).state
    s = apply_end(s, end(), 1.0, POLICY).state
    plan = plan_emission(s, CFG, 1.0)
    assert plan is not None and (plan.cause, plan.rewarded) == ("dropped", False)
    s = emitted(s, 1, 1.0)
    s = apply_reward(s, reward_event(), 2.0, CFG).state
    s = apply_step(s, step(index=1), 3.0, CFG, POLICY).state
    assert plan_emission(s, CFG, 1e6) is None  # stays dropped: no new versions


def test_mark_emitted_keeps_state_no_longer_than_retention() -> None:
    from datetime import UTC, datetime

    from sluice.events import EligibilityDecision

    s = apply_step(None, step(), 0.0, CFG, POLICY).state
    deadline = datetime.fromtimestamp(3000.0, tz=UTC)
    done = mark_emitted(s, 1, EligibilityDecision(decision="train", retention_deadline=deadline), 100.0)
    assert not done.purge_steps
    assert (done.state.emitted_version, done.state.dirty, done.state.retain_until) == (1, False, 3000.0)
    assert next_due_at(done.state, CFG) == 3000.0  # before keep_emitted_s (5100)
    assert is_expired(done.state, CFG, 3000.0) and not is_expired(done.state, CFG, 2999.0)


def test_drop_decided_at_emission_purges_content() -> None:
    from sluice.events import EligibilityDecision

    s = apply_step(None, step(), 0.0, CFG, POLICY).state
    s = apply_reward(s, reward_event(critique="c"), 0.0, CFG).state
    done = mark_emitted(s, 1, EligibilityDecision(decision="drop", reasons=["retention_expired:x"]), 9.0)
    assert done.purge_steps
    assert done.state.stored_step_ids == [] and done.state.rewards == []
    assert done.state.drop_reasons == ["retention_expired:x"]


def test_a_version_sent_but_never_stored_is_planned_again_with_its_number() -> None:
    from governance.reward_join import reopen_unstored
    from sluice.events import EligibilityDecision

    s = apply_step(None, step(), 0.0, CFG, POLICY).state
    s = apply_reward(s, reward_event(), 1.0, CFG).state
    s = apply_end(s, end(), 2.0, POLICY).state
    first = plan_emission(s, CFG, 3.0)
    assert first is not None and first.version == 1
    s = mark_emitted(s, 1, EligibilityDecision(decision="train"), 3.0).state
    assert plan_emission(s, CFG, 4.0) is None
    assert reopen_unstored(s, stored_version=1) is None  # the store has it
    again = reopen_unstored(s, stored_version=0)
    assert again is not None
    plan = plan_emission(again, CFG, 4.0)
    assert plan is not None and plan.version == 1 and plan.cause == first.cause
    # a state never emitted, or erased, has nothing to send again
    fresh = apply_step(None, step(), 0.0, CFG, POLICY).state
    assert reopen_unstored(fresh, 0) is None
    marker = JoinState.erased_marker("t", "acme", 5.0, 60.0)
    assert reopen_unstored(marker.model_copy(update={"emitted_version": 2}), 0) is None
