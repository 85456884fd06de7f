"""Feedback as rewards: accept/edit/retry/delete/... signals become ``kind="feedback"`` rewards.

Two sources: ``RewardEvent`` with ``kind="feedback"`` and a signal name (value from
``RewardJoinConfig.feedback_values`` when the event has none), and ``FeedbackSignal`` entries in a step's
``action_result.feedback`` (harvested when ``harvest_feedback`` is on, attached to that step). Harvested
rewards get ids derived from the step's event id, so redelivery yields the same rewards.
"""

from __future__ import annotations

from governance.config import RewardJoinConfig
from sluice.events import Reward, StepEvent


def reward_value(reward: Reward, cfg: RewardJoinConfig) -> float | None:
    """The value a reward contributes: its own, else the configured value of its feedback signal."""
    if reward.value is not None:
        return reward.value
    if reward.kind == "feedback":
        return cfg.feedback_values.get(reward.name)
    return None


def harvest_feedback(step: StepEvent, cfg: RewardJoinConfig) -> list[Reward]:
    """Rewards for the feedback signals recorded on ``step`` (empty when harvesting is off)."""
    if not cfg.harvest_feedback:
        return []
    return [
        Reward(
            reward_id=f"{step.event_id}:feedback:{i}",
            name=signal.kind,
            kind="feedback",
            value=cfg.feedback_values.get(signal.kind),
            critique=signal.detail,
            source="feedback",
            step_index=step.step_index,
            created_at=signal.at,
        )
        for i, signal in enumerate(step.action_result.feedback)
    ]
