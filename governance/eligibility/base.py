"""The plug point of the eligibility policy: a rule looks at the facts and returns findings.

Each finding names an outcome (train / audit_only / drop) and a reason code ``name:detail``. The decision
is the most severe outcome any rule found; its reasons are the findings of that outcome, in rule order.
Rules get the time as an argument and never read a clock, so a decision is reproducible.
"""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=4096)
def finding(outcome: Outcome, reason: str) -> Finding:
    """The finding ``(outcome, reason)``, built once: findings are frozen values, and the join asks the
    rules on every step, where the same reasons come back (``residual_pii:0``, ``retention_days:30``)."""
    return Finding(outcome=outcome, reason=reason)


class EligibilityRule(ABC):
    """One aspect of the policy (tenant opt-in, consent, data class, ...)."""

    name: str

    @abstractmethod
    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        """Findings about ``facts`` under ``policy`` at time ``now`` (at least one)."""
