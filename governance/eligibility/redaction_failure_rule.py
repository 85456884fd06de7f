"""Fail closed: a trajectory with an event whose redaction failed or timed out is never trained on.

The redact stage publishes such an event withheld (its text removed) with the failure in its
redaction report; the trajectory is still kept for audit (nothing raw is in it), and the reasons say
which failure kept it out of training (``redaction_failed:timeout``).
"""

from __future__ import annotations

from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding, finding
from governance.eligibility.facts import TrajectoryFacts


class RedactionFailureRule(EligibilityRule):
    name = "redaction_failure"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        if facts.redaction_failures:
            return [finding("audit_only", f"redaction_failed:{f}") for f in facts.redaction_failures]
        return []  # nothing failed: no finding (the other rules give the train reasons)
