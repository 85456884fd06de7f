"""The governance fields every step and trajectory carries: redaction state and report, consent, training
eligibility, replay grade (and its order), retention and data subjects.

    pytest tests/sluice/test_events.py
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from sluice.events.base import _Model


class RedactionReport(_Model):
    entities: dict[str, int] = Field(default_factory=dict, description="Entity type -> count; never values.")
    recognizer_version: str = ""
    config_version: str = ""
    cached_texts: int = 0
    analysed_texts: int = 0
    residual: int = Field(
        0, ge=0, description="Findings left in place (operator 'keep' or below the score threshold)."
    )
    failure: str | None = Field(
        None,
        description="Why redaction failed ('timeout', 'error:<type>'): the event's text was withheld, "
        "and its trajectory is never train-eligible.",
    )


class Consent(_Model):
    training: bool | None = None
    flags: dict[str, bool] = Field(default_factory=dict)


class EligibilityDecision(_Model):
    decision: Literal["train", "audit_only", "drop"]
    reasons: list[str] = Field(default_factory=list)
    policy_version: str = ""
    retention_deadline: datetime | None = None


ReplayGradeName = Literal["deterministic", "approximate", "non_replayable"]
REPLAY_GRADES: tuple[ReplayGradeName, ...] = get_args(ReplayGradeName)
"""Replay grades from best to worst (the order of ``ReplayGradeName``)."""
GRADE_RANK: dict[ReplayGradeName, int] = {g: len(REPLAY_GRADES) - 1 - i for i, g in enumerate(REPLAY_GRADES)}
"""A grade's rank: higher is more replayable."""


def grade_at_least(grade: ReplayGradeName, minimum: ReplayGradeName) -> bool:
    """Whether ``grade`` is as replayable as ``minimum`` or more."""
    return GRADE_RANK[grade] >= GRADE_RANK[minimum]


class ReplayGrade(_Model):
    grade: ReplayGradeName
    reasons: list[str] = Field(default_factory=list)


class Governance(_Model):
    redaction: Literal["raw", "redacted"] = "raw"
    redaction_report: RedactionReport | None = None
    data_class: str = "internal"
    consent: Consent = Field(default_factory=Consent)
    retention_deadline: datetime | None = None
    eligibility: EligibilityDecision | None = None
    replay: ReplayGrade | None = None
    subject_ids: list[str] = Field(default_factory=list, description="Data-subject ids for erasure requests.")
