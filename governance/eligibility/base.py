"""The plug point of the eligibility policy: a rule looks at the facts and returns findings.

Each finding names an outcome (train / audit_only / drop) and a reason code ``name:detail``. The decision
is the most severe outcome any rule found; its reasons are the findings of that outcome, in rule order.
Rules get the time as an argument and never read a clock, so a decision is reproducible.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from governance.config import EligibilityPolicy
from governance.eligibility.facts import TrajectoryFacts

Outcome = Literal["train", "audit_only", "drop"]
SEVERITY: dict[Outcome, int] = {"train": 0, "audit_only": 1, "drop": 2}


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    outcome: Outcome
    reason: str


class EligibilityRule(ABC):
    """One aspect of the policy (tenant opt-in, consent, data class, ...)."""

    name: str

    @abstractmethod
    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        """Findings about ``facts`` under ``policy`` at time ``now`` (at least one)."""
