"""Residual PII: findings left in place by redaction keep a trajectory out of training above the
tolerated count; an event that never went through redaction must not be kept at all."""

from __future__ import annotations

from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding, finding
from governance.eligibility.facts import TrajectoryFacts


class ResidualPiiRule(EligibilityRule):
    name = "residual_pii"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        if facts.unredacted_events:
            return [finding("drop", f"not_redacted:{facts.unredacted_events}")]
        if facts.residual_pii > policy.max_residual_pii:
            return [
                finding(
                    "audit_only",
                    f"residual_pii:{facts.residual_pii}>{policy.max_residual_pii}",
                )
            ]
        return [finding("train", f"residual_pii:{facts.residual_pii}")]
