"""What the eligibility policy looks at, accumulated event by event into one small model.

The join keeps one ``TrajectoryFacts`` per trajectory (a few hundred bytes, never text), so a decision
can be taken — and a doomed trajectory's content refused — without re-reading its steps. ``add_step`` and
``add_end`` return new objects; merging is order-independent, so redelivered events change nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from sluice.events import Governance, StepEvent, TrajectoryEndEvent
from sluice.frozen import Frozen
from sluice.model_update import updated

ConsentValue = Literal["true", "false", "unknown"]


def _union(a: list[str], b: list[str] | set[str] | tuple[str, ...]) -> list[str]:
    """The sorted set of both; ``a`` itself when ``b`` adds nothing to it (the common case on every step:
    ``a`` is a sorted set already, and facts are frozen, so their lists are shared, never changed)."""
    for item in b:
        if item not in a:
            return sorted(set(a) | set(b))
    return a


class TrajectoryFacts(Frozen):
    """Policy inputs of one trajectory. Lists are sorted sets so equal facts serialise equally."""

    step_count: int = 0
    tenants: list[str] = Field(default_factory=list)
    data_classes: list[str] = Field(default_factory=list)
    consent_training: list[ConsentValue] = Field(
        default_factory=list, description="consent.training values seen (true/false/unknown)."
    )
    flags_true_everywhere: list[str] | None = Field(
        None, description="Consent flags true on every event so far (None before the first one)."
    )
    flags_false_anywhere: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list, description="Requested and responding model names.")
    unknown_model_steps: int = 0
    residual_pii: int = 0
    unredacted_events: int = 0
    redaction_failures: list[str] = Field(
        default_factory=list, description="Why redaction failed on some event ('timeout', 'error:<type>')."
    )
    entities: dict[str, int] = Field(default_factory=dict, description="Redacted entity type -> count.")
    subject_ids: list[str] = Field(default_factory=list)
    first_step_at: datetime | None = None

    def _with_governance(self, gov: Governance, tenant: str) -> dict[str, Any]:
        consent = gov.consent.training
        value: ConsentValue = "unknown" if consent is None else ("true" if consent else "false")
        flags = gov.consent.flags
        true_flags = {k for k, v in flags.items() if v} if flags else set()
        false_flags = [k for k, v in flags.items() if not v] if flags else []
        everywhere = (
            sorted(true_flags)
            if self.flags_true_everywhere is None
            else sorted(set(self.flags_true_everywhere) & true_flags)
        )
        report = gov.redaction_report
        entities = self.entities
        if report is not None and report.entities:
            merged = dict(entities)
            for name, n in report.entities.items():
                merged[name] = merged.get(name, 0) + n
            entities = dict(sorted(merged.items()))
        return {
            "tenants": _union(self.tenants, (tenant,)),
            "data_classes": _union(self.data_classes, (gov.data_class,)),
            "consent_training": _union(self.consent_training, (value,)),
            "flags_true_everywhere": everywhere,
            "flags_false_anywhere": _union(self.flags_false_anywhere, false_flags),
            "residual_pii": self.residual_pii + (report.residual if report else 0),
            "unredacted_events": self.unredacted_events + int(gov.redaction != "redacted"),
            "redaction_failures": _union(
                self.redaction_failures, (report.failure,) if report and report.failure else ()
            ),
            "entities": entities,
            "subject_ids": _union(self.subject_ids, gov.subject_ids),
        }

    def add_step(self, step: StepEvent) -> TrajectoryFacts:
        """Facts after one more step (call once per distinct step event)."""
        gen = step.metadata.gen_ai
        models = [m for m in (gen.request_model, gen.response_model) if m]
        first = step.created_at if self.first_step_at is None else min(self.first_step_at, step.created_at)
        return updated(
            self,
            {
                **self._with_governance(step.governance, step.tenant),
                "step_count": self.step_count + 1,
                "models": _union(self.models, models),
                "unknown_model_steps": self.unknown_model_steps + int(not gen.request_model),
                "first_step_at": first,
            },
        )

    def add_end(self, end: TrajectoryEndEvent) -> TrajectoryFacts:
        """Facts after the end event. It carries no content, and harnesses often leave its envelope at the
        defaults, so only what it says explicitly counts: its tenant, a refusal (consent.training=false),
        withdrawn flags and data-subject ids."""
        gov = end.governance
        refused: list[ConsentValue] = ["false"] if gov.consent.training is False else []
        false_flags = [k for k, v in gov.consent.flags.items() if not v]
        return updated(
            self,
            {
                "tenants": _union(self.tenants, [end.tenant]),
                "consent_training": _union(self.consent_training, refused),
                "flags_false_anywhere": _union(self.flags_false_anywhere, false_flags),
                "subject_ids": _union(self.subject_ids, gov.subject_ids),
            },
        )
