"""Group-normalised advantages and the staleness bound."""

from __future__ import annotations

import pytest

from trainers.grpo.advantages import group_advantages, staleness_weight


def test_group_advantages_normalised() -> None:
    adv = group_advantages([1.0, 0.0, 0.0, 1.0])  # mean 0.5, population std 0.5
    assert adv == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)
    assert group_advantages([1.0, 0.0], scale=False) == pytest.approx([0.5, -0.5])


def test_equal_rewards_carry_no_signal() -> None:
    assert group_advantages([0.3, 0.3, 0.3]) == [0.0, 0.0, 0.0]
    assert group_advantages([]) == []


def test_staleness_drop_or_downweight() -> None:
    assert staleness_weight(1, 1, "drop") == 1.0
    assert staleness_weight(2, 1, "drop") is None
    assert staleness_weight(3, 1, "downweight", decay=0.5) == 0.25
    assert staleness_weight(0, 0, "drop") == 1.0
