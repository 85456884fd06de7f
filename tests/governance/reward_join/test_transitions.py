"""State transitions: dedupe of redelivered events, drop purges content, feedback names, versions."""

from __future__ import annotations

from governance.config import EligibilityPolicy, RewardJoinConfig, TenantPolicy
from governance.reward_join import apply_end, apply_reward, apply_step
from sluice.events import FeedbackSignal, Reward
from tests.governance.event_builders import end, governance, reward_event, step

CFG = RewardJoinConfig(required=["score"])
POLICY = EligibilityPolicy(tenants={"acme": TenantPolicy(training_opt_in=True)})


def test_redelivered_step_changes_nothing() -> None:
    s1 = step()
    first = apply_step(None, s1, 1.0, CFG, POLICY)
    assert first.changed and first.store_step
    again = apply_step(first.state, s1, 2.0, CFG, POLICY)
    assert not again.changed
    assert again.state == first.state
    assert again.store_step  # re-written so a lost changelog write is repaired


def test_redelivered_reward_and_end_change_nothing() -> None:
    s = apply_step(None, step(), 1.0, CFG, POLICY).state
    rw, e = reward_event(), end()
    s = apply_reward(s, rw, 2.0, CFG).state
    s = apply_end(s, e, 3.0, POLICY).state
    assert not apply_reward(s, rw, 4.0, CFG).changed
    assert not apply_end(s, e, 4.0, POLICY).changed
    assert len(s.rewards) == 1 and s.end_seen_at == 3.0


def test_step_order_does_not_matter_for_facts_and_times() -> None:
    a, b = step(index=0), step(index=1)
    s1 = apply_step(apply_step(None, a, 1.0, CFG, POLICY).state, b, 2.0, CFG, POLICY).state
    s2 = apply_step(apply_step(None, b, 1.0, CFG, POLICY).state, a, 2.0, CFG, POLICY).state
    assert s1.facts == s2.facts
    assert (s1.first_step_at, s1.last_step_at) == (s2.first_step_at, s2.last_step_at)


def test_drop_stops_storing_and_purges_what_was_stored() -> None:
    s = apply_step(None, step(), 1.0, CFG, POLICY).state
    s = apply_reward(s, reward_event(critique="nice"), 1.5, CFG).state
    assert s.stored_step_ids and s.rewards
    tr = apply_step(s, step(index=1, gov=governance(flags={"retain": False})), 2.0, CFG, POLICY)
    assert tr.purge_steps and not tr.store_step
    assert tr.state.stored_step_ids == [] and tr.state.rewards == []
    assert tr.state.drop_reasons == ["consent_withdrawn:retain"]
    assert len(tr.state.step_ids) == 2 and tr.state.reward_ids  # still deduplicated
    later = apply_step(tr.state, step(index=2), 3.0, CFG, POLICY)
    assert not later.store_step and not later.purge_steps


def test_end_event_can_drop() -> None:
    s = apply_step(None, step(), 1.0, CFG, POLICY).state
    tr = apply_end(s, end(governance=governance(flags={"retain": False})), 2.0, POLICY)
    assert tr.purge_steps and tr.state.dropped


def test_reward_names_include_step_rewards_and_feedback() -> None:
    s1 = step(rewards=[Reward(name="unit_tests", value=1.0)])
    s1.action_result.feedback = [FeedbackSignal(kind="accept")]
    s = apply_step(None, s1, 1.0, CFG, POLICY).state
    assert s.reward_names == ["accept", "unit_tests"]
    assert s.value_rewards == 2


def test_reward_from_another_tenant_is_rejected() -> None:
    import pytest

    from governance.reward_join.transitions import TenantMismatch

    s = apply_step(None, step(tenant="acme"), 1.0, CFG, POLICY).state
    with pytest.raises(TenantMismatch):
        apply_reward(s, reward_event(tenant="globex"), 2.0, CFG)
    with pytest.raises(TenantMismatch):
        apply_step(s, step(index=1, tenant="globex"), 2.0, CFG, POLICY)
    with pytest.raises(TenantMismatch):
        apply_end(s, end(tenant="globex"), 2.0, POLICY)


def test_early_foreign_reward_cannot_claim_a_trajectory() -> None:
    """A tenant that posts a reward first does not become the owner of another tenant's steps."""
    s = apply_reward(None, reward_event(tenant="globex", value=0.0), 1.0, CFG).state
    assert s.tenant == "globex" and not s.tenant_confirmed
    s = apply_step(s, step(tenant="acme"), 2.0, CFG, POLICY).state
    assert s.tenant == "acme" and s.tenant_confirmed
    assert s.rewards == [] and s.reward_names == [] and s.foreign_rewards_discarded == 1
    s = apply_reward(s, reward_event(tenant="acme", value=1.0, reward_id="r2"), 3.0, CFG).state
    assert [r.value for r in s.rewards] == [1.0]


def test_early_reward_of_the_owner_is_kept() -> None:
    s = apply_reward(None, reward_event(tenant="acme"), 1.0, CFG).state
    s = apply_step(s, step(tenant="acme"), 2.0, CFG, POLICY).state
    assert len(s.rewards) == 1 and s.tenant_confirmed and s.foreign_rewards_discarded == 0
