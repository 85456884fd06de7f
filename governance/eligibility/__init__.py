"""Training-eligibility tagging: a YAML policy decides train / audit_only / drop per trajectory.

Rules (one file each, behind ``base.EligibilityRule``): tenant opt-in, consent (and withdrawal flags),
data class, residual PII after redaction, redaction failures (fail closed), model licence (blocked model globs), retention period. Inputs are
``TrajectoryFacts`` accumulated by the join from each redacted event; the time is passed in.

    from governance.eligibility import TrajectoryFacts, decide_eligibility
"""

from governance.eligibility.data_class_rule import effective_data_class
from governance.eligibility.decide import DEFAULT_RULES, decide_eligibility, drop_reasons
from governance.eligibility.facts import TrajectoryFacts
from governance.eligibility.retention_rule import retention_deadline
from governance.eligibility.train_gate import train_gate
from sluice.events import GRADE_RANK, grade_at_least

__all__ = [
    "DEFAULT_RULES",
    "GRADE_RANK",
    "TrajectoryFacts",
    "decide_eligibility",
    "drop_reasons",
    "effective_data_class",
    "grade_at_least",
    "retention_deadline",
    "train_gate",
]
