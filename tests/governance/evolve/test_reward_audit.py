"""The reward audit's decision: training rewards that agree with the task's checker pass; a source that
disagrees is named; too few graded rows wait; none gradable cannot be audited."""

from __future__ import annotations

from governance.evolve.reward_audit import AuditedRow, RewardAuditConfig, audit_decision

CFG = RewardAuditConfig(min_rows=8, tolerance=0.25, min_agreement=0.8)


def rows(pairs: list[tuple[float, float]], source: str) -> list[AuditedRow]:
    return [AuditedRow(trajectory_id=f"{source}-{i}", posted=p, graded=g, sources=(source,))
            for i, (p, g) in enumerate(pairs)]  # fmt: skip


def test_rewards_that_agree_with_the_checker_pass() -> None:
    got = audit_decision(rows([(1.0, 1.0), (0.0, 0.0), (0.9, 1.0), (0.2, 0.0)] * 3, "checker"), CFG)
    assert got.passed and got.numbers["agreement"] == 1.0


def test_a_gamed_source_is_turned_down_and_named() -> None:
    honest = rows([(1.0, 1.0), (0.0, 0.0)] * 5, "checker")
    gamed = rows([(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] * 4, "keyword-grader")
    got = audit_decision(honest + gamed, CFG)
    assert not got.passed and got.decision == "fail"
    assert got.numbers["by_source"]["keyword-grader"]["agreement"] == round(4 / 12, 3)
    assert "'keyword-grader'" in got.summary


def test_too_few_graded_rows_wait_and_none_gradable_cannot_audit() -> None:
    got = audit_decision(rows([(1.0, 0.0)] * 7, "keyword-grader"), CFG)
    assert not got.passed and got.decision == "wait" and "need 8" in got.summary
    none = audit_decision([], CFG)
    assert none.passed and "not audited" in none.summary
