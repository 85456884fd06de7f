"""Data class: a droppable class anywhere drops the trajectory; a class the tenant may not train on keeps
it for audit only."""

from __future__ import annotations

from datetime import datetime

from governance.config import EligibilityPolicy
from governance.eligibility.base import EligibilityRule, Finding, finding
from governance.eligibility.facts import TrajectoryFacts


def trainable_classes(facts: TrajectoryFacts, policy: EligibilityPolicy) -> set[str]:
    tenant = policy.tenant(facts.tenants[0] if len(facts.tenants) == 1 else None)
    allowed = tenant.allowed_data_classes
    return set(policy.train_data_classes if allowed is None else allowed) - set(policy.drop_data_classes)


def effective_data_class(facts: TrajectoryFacts, policy: EligibilityPolicy) -> str:
    """The most restrictive class seen: a dropped one, else one not trainable, else a trainable one."""
    if not facts.data_classes:
        return "internal"
    dropped = [c for c in facts.data_classes if c in policy.drop_data_classes]
    if dropped:
        return dropped[0]
    untrainable = [c for c in facts.data_classes if c not in trainable_classes(facts, policy)]
    return (untrainable or facts.data_classes)[0]


class DataClassRule(EligibilityRule):
    name = "data_class"

    def check(self, facts: TrajectoryFacts, policy: EligibilityPolicy, now: datetime) -> list[Finding]:
        dropped = [c for c in facts.data_classes if c in policy.drop_data_classes]
        if dropped:
            return [finding("drop", "data_class_dropped:" + ",".join(dropped))]
        allowed = trainable_classes(facts, policy)
        blocked = [c for c in facts.data_classes if c not in allowed]
        if blocked:
            return [finding("audit_only", "data_class_not_trainable:" + ",".join(blocked))]
        return [finding("train", "data_class:" + ",".join(facts.data_classes))]
