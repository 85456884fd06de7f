"""Assembling the emitted trajectory from the join state and the stored (redacted) step bodies.

Steps are ordered by step index (then event time), tool answers are attached to the asking step,
step-level rewards (reward events with a ``step_index``, step-carried rewards, harvested feedback, and
rewards read from the next state: tool errors, retries, corrections, ``next_state``) are
attached to their step and trajectory-level rewards to the trajectory; a step-level reward whose step
never arrived stays on the trajectory with its ``step_index``, so nothing is lost. ``event_id`` is
``trajectory_version_id(trajectory_id, version)``, so re-emitting a version is idempotent downstream.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from governance.config import RewardJoinConfig
from governance.reward_join.combine import trajectory_reward
from governance.reward_join.emission import EmissionPlan
from governance.reward_join.feedback import harvest_feedback
from governance.reward_join.next_state import harvest_next_state
from governance.reward_join.state import JoinState
from governance.reward_join.tool_results import attach_tool_results
from sluice.events import Reward, StepEvent, Trajectory, trajectory_version_id


def _attach_rewards(steps: list[StepEvent], rewards: list[Reward]) -> list[Reward]:
    """Put step-level rewards on their steps (mutates ``steps``); returns those left for the trajectory."""
    by_index = {s.step_index: s for s in steps}  # the last step with an index wins (a retried call)
    left: list[Reward] = []
    for reward in rewards:
        step = by_index.get(reward.step_index) if reward.step_index is not None else None
        if step is None:
            left.append(reward)
        elif all(r.reward_id != reward.reward_id for r in step.rewards):
            step.rewards.append(reward)
    return left


def assemble_trajectory(
    state: JoinState,
    steps: list[StepEvent],
    plan: EmissionPlan,
    cfg: RewardJoinConfig,
    now: datetime,
) -> Trajectory:
    """The trajectory content of ``plan``'s version (governance fields are filled by the caller)."""
    ordered = sorted(steps, key=lambda s: (s.step_index, s.created_at, s.event_id))
    ordered = attach_tool_results(ordered)
    for step in ordered:
        _attach_rewards([step], harvest_feedback(step, cfg))
    _attach_rewards(ordered, harvest_next_state(ordered, cfg.next_state))
    traj_rewards = _attach_rewards(ordered, list(state.rewards))
    step_rewards = [r for s in ordered for r in s.rewards]
    trajectory_level = [r for r in traj_rewards if r.step_index is None]
    return _versioned(
        state,
        plan,
        now,
        steps=ordered,
        rewards=traj_rewards,
        reward=trajectory_reward(trajectory_level, step_rewards, cfg),
        rewarded=plan.rewarded,
    )


def dropped_envelope(state: JoinState, plan: EmissionPlan, now: datetime) -> Trajectory:
    """What the audit trail keeps of a dropped trajectory: identity, times, status — no content."""
    return _versioned(state, plan, now, rewarded=False)


def _versioned(state: JoinState, plan: EmissionPlan, now: datetime, **content: Any) -> Trajectory:
    """``plan``'s version of the trajectory: identity, times and status from ``state`` and ``plan``, plus
    ``content`` (steps, rewards, reward, rewarded)."""
    return Trajectory(
        event_id=trajectory_version_id(state.trajectory_id, plan.version),
        trajectory_id=state.trajectory_id,
        tenant=state.tenant,
        created_at=now,
        version=plan.version,
        session_id=state.session_id,
        status=plan.status,
        first_step_at=state.first_step_at,
        ended_at=state.ended_at or state.last_step_at,
        emitted_at=now,
        **content,
    )
