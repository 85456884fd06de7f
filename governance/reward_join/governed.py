"""The record a trajectory version is emitted as: content plus its governance envelope.

    build_emission(state, steps, plan, join_cfg, policy, replay_cfg, now) -> Emission

The envelope merges the redaction reports of the steps (entity counts, residual PII; never values), the
most restrictive data class, the consent seen, the eligibility decision (taken at ``now``) with its
retention deadline (its reasons also name the signals read from the next state, ``harvested:<signal>@<step>``),
and the replay grade. ``Trajectory.train_blockers`` lists why it may not go to the
train topic (empty: it goes): the decision is taken here once and travels with the record, so the store
keeps it rather than deciding again. Dropped trajectories carry no steps and no rewards.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from governance.config import EligibilityPolicy, ReplayConfig, RewardJoinConfig
from governance.eligibility import (
    TrajectoryFacts,
    decide_eligibility,
    effective_data_class,
    train_gate,
)
from governance.replay import grade_replayability
from governance.reward_join.assemble import assemble_trajectory, dropped_envelope
from governance.reward_join.emission import EmissionPlan
from governance.reward_join.next_state import harvested_reasons
from governance.reward_join.state import JoinState
from sluice.events import (
    Consent,
    EligibilityDecision,
    Governance,
    RedactionReport,
    ReplayGrade,
    StepEvent,
    Trajectory,
)


class Emission(BaseModel):
    """A governed trajectory version, carrying the train decision (``Trajectory.train_blockers``)."""

    model_config = ConfigDict(frozen=True)

    trajectory: Trajectory

    @property
    def train_blockers(self) -> list[str]:
        """Why it may not go to the train topic (empty: it goes)."""
        blockers = self.trajectory.train_blockers
        return ["undecided"] if blockers is None else blockers

    @property
    def to_train(self) -> bool:
        return not self.train_blockers


def _consent(facts: TrajectoryFacts) -> Consent:
    seen = set(facts.consent_training)
    training = False if "false" in seen else (True if seen == {"true"} else None)
    flags = {f: True for f in facts.flags_true_everywhere or []}
    flags.update({f: False for f in facts.flags_false_anywhere})
    return Consent(training=training, flags=dict(sorted(flags.items())))


def _report(facts: TrajectoryFacts, steps: list[StepEvent]) -> RedactionReport:
    last = next(
        (s.governance.redaction_report for s in reversed(steps) if s.governance.redaction_report), None
    )
    return RedactionReport(
        entities=facts.entities,
        residual=facts.residual_pii,
        recognizer_version=last.recognizer_version if last else "",
        config_version=last.config_version if last else "",
        cached_texts=sum(
            s.governance.redaction_report.cached_texts for s in steps if s.governance.redaction_report
        ),
        analysed_texts=sum(
            s.governance.redaction_report.analysed_texts for s in steps if s.governance.redaction_report
        ),
    )


def governance_envelope(
    facts: TrajectoryFacts,
    steps: list[StepEvent],
    decision: EligibilityDecision,
    grade: ReplayGrade,
    policy: EligibilityPolicy,
) -> Governance:
    return Governance(
        redaction="redacted" if not facts.unredacted_events else "raw",
        redaction_report=_report(facts, steps),
        data_class=effective_data_class(facts, policy),
        consent=_consent(facts),
        retention_deadline=decision.retention_deadline,
        eligibility=decision,
        replay=grade,
        subject_ids=facts.subject_ids,
    )


def build_emission(
    state: JoinState,
    steps: list[StepEvent],
    plan: EmissionPlan,
    join_cfg: RewardJoinConfig,
    policy: EligibilityPolicy,
    replay_cfg: ReplayConfig,
    now: float,
) -> Emission:
    """The governed trajectory of ``plan``'s version and whether it may be trained on."""
    at = datetime.fromtimestamp(now, tz=UTC)
    decision = decide_eligibility(state.facts, policy, at)
    if plan.cause == "dropped" or decision.decision == "drop":
        if decision.decision != "drop":  # dropped earlier; the policy's reasons then still stand
            decision = decision.model_copy(update={"decision": "drop", "reasons": state.drop_reasons})
        trajectory = dropped_envelope(state, plan, at)
        grade = ReplayGrade(grade="non_replayable", reasons=["content_dropped"])
        steps = []
    else:
        trajectory = assemble_trajectory(state, steps, plan, join_cfg, at)
        grade = grade_replayability(trajectory, replay_cfg)
        harvested = harvested_reasons([r for s in trajectory.steps for r in s.rewards])
        if harvested:  # the decision names the signals read from the next state that it was taken with
            decision = decision.model_copy(update={"reasons": [*decision.reasons, *harvested]})
    trajectory.governance = governance_envelope(state.facts, steps, decision, grade, policy)
    trajectory.train_blockers = train_gate(trajectory, replay_cfg.min_train_grade)
    return Emission(trajectory=trajectory)
