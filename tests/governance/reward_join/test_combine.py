"""Reward combination modes and feedback values."""

from __future__ import annotations

from datetime import timedelta

import pytest

from governance.config import RewardJoinConfig
from governance.reward_join import combine_rewards, trajectory_reward
from governance.reward_join.feedback import harvest_feedback, reward_value
from sluice.events import FeedbackSignal, Reward
from tests.governance.event_builders import T0, step


def r(value, source="api", at=0, kind="scalar", name="score", step_index=None) -> Reward:
    return Reward(
        name=name,
        value=value,
        source=source,
        kind=kind,
        step_index=step_index,
        created_at=T0 + timedelta(seconds=at),
    )


REWARDS = [
    r(1.0, "judge", at=2),
    r(0.0, "human", at=1),
    r(0.5, "judge", at=3),
    r(None, kind="critique", at=9),
]


@pytest.mark.parametrize(
    ("combine", "weights", "expected"),
    [
        ("last", {}, 0.5),
        ("mean", {}, 0.5),
        ("sum", {}, 1.5),
        ("weighted", {"human": 3.0, "judge": 1.0}, (0.0 * 3 + 1.0 + 0.5) / 5),
        ("weighted", {"human": 1.0}, 0.0),
    ],
)
def test_combine_modes(combine, weights, expected) -> None:
    cfg = RewardJoinConfig(combine=combine, source_weights=weights)
    assert combine_rewards(REWARDS, cfg) == pytest.approx(expected)


def test_no_value_no_reward_and_no_silent_zero() -> None:
    assert combine_rewards([r(None, kind="critique")], RewardJoinConfig()) is None
    assert combine_rewards([], RewardJoinConfig(combine="sum")) is None
    weighted = RewardJoinConfig(combine="weighted", source_weights={"human": 1.0})
    assert combine_rewards([r(1.0, "judge")], weighted) is None


def test_last_breaks_ties_by_arrival() -> None:
    assert combine_rewards([r(1.0, at=1), r(0.2, at=1)], RewardJoinConfig(combine="last")) == 0.2


def test_weighted_needs_weights() -> None:
    with pytest.raises(ValueError, match="source_weights"):
        RewardJoinConfig(combine="weighted")


def test_trajectory_reward_prefers_trajectory_level() -> None:
    cfg = RewardJoinConfig(combine="mean")
    steps = [r(0.0, step_index=0), r(1.0, step_index=1)]
    assert trajectory_reward([r(0.9)], steps, cfg) == 0.9
    assert trajectory_reward([], steps, cfg) == 0.5
    assert trajectory_reward([r(None, kind="critique")], [], cfg) is None


def test_feedback_values() -> None:
    cfg = RewardJoinConfig()
    assert reward_value(Reward(name="accept", kind="feedback"), cfg) == 1.0
    assert reward_value(Reward(name="edit", kind="feedback"), cfg) == 0.5
    assert reward_value(Reward(name="edit", kind="feedback", value=0.3), cfg) == 0.3
    assert reward_value(Reward(name="unknown", kind="feedback"), cfg) is None


def test_harvest_feedback_from_steps_is_stable() -> None:
    s = step(index=2)
    s.action_result.feedback = [FeedbackSignal(kind="retry", at=T0), FeedbackSignal(kind="accept", at=T0)]
    cfg = RewardJoinConfig()
    first, second = harvest_feedback(s, cfg), harvest_feedback(s, cfg)
    assert first == second
    assert [(x.name, x.value, x.step_index, x.kind) for x in first] == [
        ("retry", 0.0, 2, "feedback"),
        ("accept", 1.0, 2, "feedback"),
    ]
    assert harvest_feedback(s, RewardJoinConfig(harvest_feedback=False)) == []
