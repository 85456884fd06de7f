"""Tenant opt-in: only tenants that agreed to training are trained on; mixed tenants never are."""

from __future__ import annotations

from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding, finding
from governance.eligibility.facts import TrajectoryFacts


class TenantOptInRule(EligibilityRule):
    name = "tenant_opt_in"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        if len(facts.tenants) > 1:
            return [finding("audit_only", "tenant_mixed:" + ",".join(facts.tenants))]
        tenant = facts.tenants[0] if facts.tenants else ""
        if policy.tenant(tenant).training_opt_in:
            return [finding("train", f"tenant_opted_in:{tenant}")]
        return [finding("audit_only", f"tenant_not_opted_in:{tenant}")]
