"""Any chat trajectory from traffic. The reference answer, when the agent exposes one, is read from the
last step's ``hidden_state[reference_key]``; graders that need none (regex, logged reward) work without it.
"""

from __future__ import annotations

from typing import Any

from sluice.events import Trajectory
from trainers.rewards.base import RewardFunction
from trainers.tasks.base import Task


class TrafficTask(Task):
    name = "traffic"

    def __init__(
        self, reward: RewardFunction, reference_key: str = "reference", timeout_s: float = 10.0
    ) -> None:
        super().__init__(reward, timeout_s)
        self.reference_key = reference_key

    def reference(self, messages: list[dict[str, Any]], trajectory: Trajectory | None = None) -> str | None:
        if trajectory is None:
            return None
        for step in sorted(trajectory.steps, key=lambda s: s.step_index, reverse=True):
            if isinstance(step.hidden_state, dict) and self.reference_key in step.hidden_state:
                value = step.hidden_state[self.reference_key]
                return value if isinstance(value, str) else str(value)
        return None
