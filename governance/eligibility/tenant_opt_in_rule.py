"""Tenant opt-in: only tenants that agreed to training are trained on; mixed tenants never are."""

from __future__ import annotations

from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding
from governance.eligibility.facts import TrajectoryFacts


class TenantOptInRule(EligibilityRule):
    name = "tenant_opt_in"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        if len(facts.tenants) > 1:
            return [Finding(outcome="audit_only", reason="tenant_mixed:" + ",".join(facts.tenants))]
        tenant = facts.tenants[0] if facts.tenants else ""
        if policy.tenant(tenant).training_opt_in:
            return [Finding(outcome="train", reason=f"tenant_opted_in:{tenant}")]
        return [Finding(outcome="audit_only", reason=f"tenant_not_opted_in:{tenant}")]
