"""Retention: a trajectory is kept for the tenant's ``retention_days`` (else the policy's) from its first
step. Zero days, or a deadline already past at decision time, means nothing may be kept: drop."""

from __future__ import annotations

from datetime import datetime, timedelta

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding, finding
from governance.eligibility.facts import TrajectoryFacts


def retention_days(facts: TrajectoryFacts, policy: EligibilityPolicy) -> int:
    """The shortest retention of the tenants involved (the policy default for tenants without one)."""
    days = [policy.tenant(t).retention_days for t in facts.tenants] or [None]
    return min(policy.retention_days if d is None else d for d in days)


def retention_deadline(
    facts: TrajectoryFacts, policy: EligibilityPolicy, days: int | None = None
) -> datetime | None:
    """When the trajectory's content must be gone (None before its first step); ``days``:
    ``retention_days(facts, policy)`` when the caller has it already."""
    if facts.first_step_at is None:
        return None
    return facts.first_step_at + timedelta(days=retention_days(facts, policy) if days is None else days)


class RetentionRule(EligibilityRule):
    name = "retention"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        days = retention_days(facts, policy)
        if days == 0:
            return [finding("drop", "retention_zero")]
        deadline = retention_deadline(facts, policy, days)
        if deadline is not None and deadline <= now:
            return [finding("drop", f"retention_expired:{deadline.isoformat()}")]
        return [finding("train", f"retention_days:{days}")]
