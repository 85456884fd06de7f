"""The eligibility policy: one decision per combination of tenant, consent, data class, residual PII,
model licence and retention; deterministic for the same input, policy and time."""

from __future__ import annotations

from datetime import timedelta

import pytest

from governance.config import EligibilityPolicy, TenantPolicy
from governance.eligibility import TrajectoryFacts, decide_eligibility, drop_reasons, effective_data_class
from tests.governance.event_builders import T0, end, governance, metadata, step

POLICY = EligibilityPolicy(
    version="2026-11-01",
    tenants={
        "acme": TenantPolicy(training_opt_in=True, retention_days=90),
        "globex": TenantPolicy(training_opt_in=False, retention_days=7),
        "initech": TenantPolicy(training_opt_in=True, retention_days=0),
        "hooli": TenantPolicy(training_opt_in=True, allowed_data_classes=["public"]),
    },
    train_data_classes=["public", "internal"],
    drop_data_classes=["prohibited"],
    required_consent_flags=[],
    max_residual_pii=1,
    blocked_models=["gpt-4*", "*-noncommercial"],
    retention_days=30,
)
NOW = T0 + timedelta(days=1)


def facts_of(*events) -> TrajectoryFacts:
    facts = TrajectoryFacts()
    for e in events:
        facts = facts.add_step(e) if e.event_type == "step" else facts.add_end(e)
    return facts


DECISION_MATRIX = [
    ([step()], "train", "tenant_opted_in:acme"),
    ([step(tenant="globex")], "audit_only", "tenant_not_opted_in:globex"),
    ([step(tenant="nobody")], "audit_only", "tenant_not_opted_in:nobody"),
    ([step(), step(index=1, tenant="globex")], "audit_only", "tenant_mixed:acme,globex"),
    ([step(gov=governance(consent=False))], "audit_only", "consent_refused"),
    ([step(gov=governance(consent=None))], "audit_only", "consent_unknown"),
    ([step(), step(index=1, gov=governance(consent=None))], "audit_only", "consent_unknown"),
    ([step(), end(governance=governance(consent=False))], "audit_only", "consent_refused"),
    ([step(gov=governance(flags={"retain": False}))], "drop", "consent_withdrawn:retain"),
    ([step(gov=governance(data_class="prohibited"))], "drop", "data_class_dropped:prohibited"),
    (
        [step(gov=governance(data_class="confidential"))],
        "audit_only",
        "data_class_not_trainable:confidential",
    ),
    ([step(tenant="hooli")], "audit_only", "data_class_not_trainable:internal"),
    ([step(tenant="hooli", gov=governance(data_class="public"))], "train", "data_class:public"),
    ([step(gov=governance(residual=2))], "audit_only", "residual_pii:2>1"),
    ([step(gov=governance(residual=1))], "train", "residual_pii:1"),
    ([step(gov=governance(redacted=False))], "drop", "not_redacted:1"),
    ([step(meta=metadata(gen_ai={"request_model": "gpt-4o"}))], "audit_only", "model_blocked:gpt-4o"),
    (
        [step(meta=metadata(gen_ai={"request_model": "x", "response_model": "llama-noncommercial"}))],
        "audit_only",
        "model_blocked:llama-noncommercial",
    ),
    ([step(meta=metadata(gen_ai={"request_model": ""}))], "audit_only", "model_unknown:1"),
    ([step(tenant="initech")], "drop", "retention_zero"),
    ([step(created_at=T0 - timedelta(days=91))], "drop", "retention_expired:2026-10-31T12:00:00+00:00"),
]


@pytest.mark.parametrize(("events", "decision", "reason"), DECISION_MATRIX)
def test_decision_matrix(events, decision, reason) -> None:
    result = decide_eligibility(facts_of(*events), POLICY, NOW)
    assert result.decision == decision
    assert reason in result.reasons
    assert result.policy_version == "2026-11-01"


@pytest.mark.parametrize(("events", "decision", "reason"), DECISION_MATRIX)
def test_drop_reasons_are_the_decisions_reasons_when_it_drops(events, decision, reason) -> None:
    """The join's per-step question gives what the whole decision gives: its reasons when it is drop."""
    facts = facts_of(*events)
    decision = decide_eligibility(facts, POLICY, NOW)
    assert drop_reasons(facts, POLICY, NOW) == (decision.reasons if decision.decision == "drop" else [])


def test_facts_lists_stay_sorted_sets_and_unchanged_lists_are_shared() -> None:
    first = facts_of(step(tenant="globex", gov=governance(flags={"retain": True, "x": False})))
    later = first.add_step(step(index=1, tenant="acme", gov=governance(flags={"x": False, "a": False})))
    assert later.tenants == ["acme", "globex"]
    assert later.flags_false_anywhere == ["a", "x"]
    assert later.flags_true_everywhere == []
    same = later.add_step(step(index=2, tenant="globex"))
    assert same.tenants is later.tenants and same.data_classes is later.data_classes
    assert same.entities is later.entities and same.step_count == 3
    assert first.tenants == ["globex"]  # the earlier facts are untouched


def test_train_lists_every_passed_check_and_deadline() -> None:
    result = decide_eligibility(facts_of(step(), step(index=1)), POLICY, NOW)
    assert result.decision == "train"
    assert result.reasons == [
        "tenant_opted_in:acme",
        "consent_given",
        "data_class:internal",
        "residual_pii:0",
        "models_allowed:sluice-tiny-1",
        "retention_days:90",
    ]
    assert result.retention_deadline == T0 + timedelta(days=90)


def test_drop_outranks_audit_only_and_lists_only_drop_reasons() -> None:
    facts = facts_of(step(tenant="globex", gov=governance(data_class="prohibited", consent=False)))
    result = decide_eligibility(facts, POLICY, NOW)
    assert result.decision == "drop"
    assert result.reasons == ["data_class_dropped:prohibited"]


def test_required_consent_flags() -> None:
    policy = POLICY.model_copy(update={"required_consent_flags": ["research"]})
    ok = facts_of(
        step(gov=governance(flags={"research": True})),
        step(index=1, gov=governance(flags={"research": True})),
    )
    assert decide_eligibility(ok, policy, NOW).decision == "train"
    partial = facts_of(step(gov=governance(flags={"research": True})), step(index=1))
    result = decide_eligibility(partial, policy, NOW)
    assert (result.decision, result.reasons) == ("audit_only", ["consent_flag_missing:research"])


def test_consent_not_required() -> None:
    policy = POLICY.model_copy(update={"require_consent": False})
    assert decide_eligibility(facts_of(step(gov=governance(consent=None))), policy, NOW).decision == "train"


def test_same_input_same_decision_regardless_of_event_order() -> None:
    events = [step(), step(index=1, gov=governance(residual=1)), end()]
    a = decide_eligibility(facts_of(*events), POLICY, NOW)
    b = decide_eligibility(facts_of(*reversed(events)), POLICY, NOW)
    assert a == b
    assert facts_of(*events) == facts_of(*reversed(events))


def test_retention_is_measured_from_first_step_with_the_shortest_tenant_retention() -> None:
    facts = facts_of(step(tenant="acme"), step(index=1, tenant="globex", created_at=T0 + timedelta(hours=1)))
    result = decide_eligibility(facts, POLICY, NOW)
    assert result.retention_deadline == T0 + timedelta(days=7)
    assert decide_eligibility(facts, POLICY, T0 + timedelta(days=8)).decision == "drop"


def test_effective_data_class_is_the_most_restrictive() -> None:
    assert effective_data_class(facts_of(step()), POLICY) == "internal"
    mixed = facts_of(
        step(gov=governance(data_class="public")), step(index=1, gov=governance(data_class="confidential"))
    )
    assert effective_data_class(mixed, POLICY) == "confidential"
    worst = facts_of(
        step(gov=governance(data_class="prohibited")),
        step(index=1, gov=governance(data_class="confidential")),
    )
    assert effective_data_class(worst, POLICY) == "prohibited"


def test_policy_rejects_a_class_both_trained_and_dropped() -> None:
    with pytest.raises(ValueError, match="both trainable and dropped"):
        EligibilityPolicy(train_data_classes=["public"], drop_data_classes=["public"])


def test_redaction_failure_keeps_the_trajectory_out_of_training_and_says_why() -> None:
    from sluice.events import RedactionReport

    failed = governance().model_copy(update={"redaction_report": RedactionReport(failure="timeout")})
    result = decide_eligibility(facts_of(step(), step(index=1, gov=failed)), POLICY, NOW)
    assert result.decision == "audit_only"
    assert result.reasons == ["redaction_failed:timeout"]
