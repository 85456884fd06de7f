"""An erased trajectory's marker: no event changes or stores anything, nothing is emitted, it expires."""

from __future__ import annotations

from app.config import parse_config
from governance.config import RewardJoinConfig
from governance.reward_join import JoinState, apply_end, apply_reward, apply_step, plan_emission
from governance.reward_join.emission import is_expired, is_orphaned, next_due_at
from sluice.events import Reward, RewardEvent, StepEvent, TrajectoryEndEvent

CFG = RewardJoinConfig(wait_s=0, keep_emitted_s=10, orphan_ttl_s=10, keep_erased_s=100)
POLICY = parse_config({}).eligibility


def test_every_event_of_an_erased_trajectory_is_dropped_and_the_marker_expires() -> None:
    marker = JoinState.erased_marker("acme~t", "acme", now=50.0, keep_s=CFG.keep_erased_s)
    step = StepEvent(trajectory_id="acme~t", tenant="acme", step_index=0)
    for tr in (
        apply_step(marker, step, 60.0, CFG, POLICY),
        apply_reward(
            marker, RewardEvent(trajectory_id="acme~t", tenant="acme", reward=Reward(value=1)), 60.0, CFG
        ),
        apply_end(marker, TrajectoryEndEvent(trajectory_id="acme~t", tenant="acme"), 60.0, POLICY),
    ):
        assert tr.erased and not tr.changed and not tr.store_step and tr.state == marker
    assert plan_emission(marker, CFG, 10_000.0) is None and not is_orphaned(marker, CFG, 10_000.0)
    assert next_due_at(marker, CFG) == 150.0
    assert not is_expired(marker, CFG, 149.0) and is_expired(marker, CFG, 150.0)
    assert marker.model_dump(exclude_defaults=True).keys() <= {
        "trajectory_id", "tenant", "tenant_confirmed", "first_seen_at", "last_activity_at", "erased_until"
    }  # fmt: skip


def test_keep_erased_must_cover_late_rewards() -> None:
    try:
        RewardJoinConfig(keep_emitted_s=100, keep_erased_s=10)
    except ValueError as err:
        assert "keep_erased_s" in str(err)
    else:
        raise AssertionError("accepted keep_erased_s < keep_emitted_s")
