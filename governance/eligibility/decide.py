"""The eligibility decision: every rule's findings, the most severe outcome wins.

    decide_eligibility(facts, policy, now) -> EligibilityDecision
    drop_reasons(facts, policy, now) -> list[str]     # the join's question on every event: drop, and why

train: every rule allows training. audit_only: kept (redacted) for audit, never trained on. drop: the
content is not kept anywhere — the join stops storing the trajectory's steps as soon as a drop finding
appears, and the audited topic gets only its governance envelope (no steps, no rewards), so the audit
trail records that something was dropped and why. Deterministic: no clock is read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import SEVERITY, EligibilityRule, Finding, Outcome
from governance.eligibility.consent_rule import ConsentRule
from governance.eligibility.data_class_rule import DataClassRule
from governance.eligibility.facts import TrajectoryFacts
from governance.eligibility.model_licence_rule import ModelLicenceRule
from governance.eligibility.redaction_failure_rule import RedactionFailureRule
from governance.eligibility.residual_pii_rule import ResidualPiiRule
from governance.eligibility.retention_rule import RetentionRule, retention_deadline
from governance.eligibility.tenant_opt_in_rule import TenantOptInRule
from sluice.events import EligibilityDecision

DEFAULT_RULES: tuple[EligibilityRule, ...] = (
    TenantOptInRule(),
    ConsentRule(),
    DataClassRule(),
    ResidualPiiRule(),
    RedactionFailureRule(),
    ModelLicenceRule(),
    RetentionRule(),
)


def findings(
    facts: TrajectoryFacts,
    policy: EligibilityPolicy,
    now: datetime,
    rules: Sequence[EligibilityRule] = DEFAULT_RULES,
) -> list[Finding]:
    return [f for rule in rules for f in rule.check(facts, policy, now)]


def decide_eligibility(
    facts: TrajectoryFacts,
    policy: EligibilityPolicy,
    now: datetime,
    rules: Sequence[EligibilityRule] = DEFAULT_RULES,
) -> EligibilityDecision:
    """train / audit_only / drop with the reasons of that outcome, the policy version and the deadline."""
    found = findings(facts, policy, now, rules)
    outcome: Outcome = max((f.outcome for f in found), key=SEVERITY.__getitem__, default="audit_only")
    return EligibilityDecision(
        decision=outcome,
        reasons=[f.reason for f in found if f.outcome == outcome],
        policy_version=policy.version,
        retention_deadline=retention_deadline(facts, policy),
    )


def drop_reasons(
    facts: TrajectoryFacts,
    policy: EligibilityPolicy,
    now: datetime,
    rules: Sequence[EligibilityRule] = DEFAULT_RULES,
) -> list[str]:
    """The reasons of ``decide_eligibility`` when it decides drop, else none: drop is the most severe
    outcome, so it is decided exactly when a rule finds it. What the join asks on every step and end,
    without building the whole decision (outcome ranking, retention deadline) it does not read."""
    return [f.reason for f in findings(facts, policy, now, rules) if f.outcome == "drop"]
