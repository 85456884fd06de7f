"""Consent: training needs consent.training=true (and the required flags) on every event; a withdrawal
flag explicitly false (``retain: false``) means nothing may be kept, so the trajectory is dropped."""

from __future__ import annotations

from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding, finding
from governance.eligibility.facts import TrajectoryFacts


class ConsentRule(EligibilityRule):
    name = "consent"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        out: list[Finding] = []
        for flag in policy.withdrawal_flags:
            if flag in facts.flags_false_anywhere:
                out.append(finding("drop", f"consent_withdrawn:{flag}"))
        if policy.require_consent:
            if "false" in facts.consent_training:
                out.append(finding("audit_only", "consent_refused"))
            elif "unknown" in facts.consent_training or not facts.consent_training:
                out.append(finding("audit_only", "consent_unknown"))
            else:
                out.append(finding("train", "consent_given"))
        else:
            out.append(finding("train", "consent_not_required"))
        everywhere = set(facts.flags_true_everywhere or [])
        for flag in policy.required_consent_flags:
            if flag not in everywhere:
                out.append(finding("audit_only", f"consent_flag_missing:{flag}"))
        return out
