"""Diagnosis on hand-written rows: each failure mode the control plane must tell apart, and the ones it
must leave alone (too little evidence, no difference from the rest of the scope, recovered errors)."""

from __future__ import annotations

import math

import pytest

from governance.evolve.diagnosis import Diagnosis, diagnose
from governance.evolve.diagnosis_config import DiagnosisConfig
from governance.evolve.diagnosis_rows import ToolCallRow, TrajectoryRow, error_signature
from governance.evolve.significance import holm, two_proportion_z, wilson_interval, wilson_vs_tolerance

CFG = DiagnosisConfig(min_trajectories=5, min_failures=3, alpha=0.05)


def runs(
    tenant: str, task: str | None, n: int, failed: int, harness: str = "h1", **kw
) -> list[TrajectoryRow]:
    """n trajectories of one scope, the first ``failed`` with reward 0 (wrong answers), the rest 1."""
    return [
        TrajectoryRow(
            trajectory_id=f"{tenant}-{task}-{i}", tenant=tenant, task_id=task, harness_fingerprint=harness,
            reward=0.0 if i < failed else 1.0,
            final_answer="I don't know." if i < failed else "It is 42.", **kw,
        )
        for i in range(n)
    ]  # fmt: skip


def call(row: TrajectoryRow, tool: str, ok: bool, result: str = "", exit_code: int | None = None,
         step: int = 0, args: str = "{}") -> ToolCallRow:  # fmt: skip
    return ToolCallRow(trajectory_id=row.trajectory_id, step_index=step, tool=tool, is_error=not ok and exit_code is None,
                       exit_code=exit_code, result=result, arguments=args)  # fmt: skip


def only(d: Diagnosis, **match) -> list:
    return [c for c in d.clusters if all(getattr(c, k) == v for k, v in match.items())]


def test_wrong_answers_in_one_task_are_a_missing_fact() -> None:
    rows = runs("acme", "promo", 12, 10) + runs("acme", "refund", 12, 1) + runs("globex", "promo", 12, 1)
    d = diagnose(rows, [], CFG, {"trajectories": "SELECT ... FROM trajectories"})
    assert [(c.tenant, c.task_id, c.surface) for c in d.clusters] == [("acme", "promo", "memory")]
    (c,) = d.clusters
    assert "missing fact" in c.reason and c.signal == "reward"
    assert c.trajectories == 12 and c.failures == 10 and c.mean_reward == pytest.approx(2 / 12, abs=1e-3)
    ev = c.evidence[0]
    assert ev.query == "SELECT ... FROM trajectories"
    assert ev.numbers["rest_trajectories"] == 12 and ev.numbers["rest_failures"] == 1
    assert ev.numbers["test"] == "two_proportion_z" and ev.numbers["p_value"] < 0.01
    assert set(c.sample_trajectory_ids) <= {f"acme-promo-{i}" for i in range(10)}


def test_negative_feedback_without_reward_marks_failures() -> None:
    rows = [
        TrajectoryRow(trajectory_id=f"t{i}", tenant="acme", task_id="faq", feedback=["thumbs_down"] if i < 8 else ["accept"])
        for i in range(10)
    ] + runs("acme", "other", 10, 0)  # fmt: skip
    (c,) = diagnose(rows, [], CFG).clusters
    assert (c.task_id, c.surface, c.signal, c.failures) == ("faq", "memory", "feedback", 8)


def test_tool_argument_format_is_a_tool_schema_change() -> None:
    rows = runs("globex", "booking", 14, 9)
    calls = [call(r, "book_meeting", False, f"invalid date '05/0{i}/2026': expected format YYYY-MM-DD")
             for i, r in enumerate(rows[:9])] + [call(r, "book_meeting", True, "booked") for r in rows[9:]]  # fmt: skip
    d = diagnose(rows, calls, CFG, {"tool_calls": "SELECT ... FROM steps"})
    (c,) = d.clusters  # one error signature for all nine, whatever date each sent
    assert (c.tool, c.surface, c.signal) == ("book_meeting", "tool_schema", "tool_error")
    assert c.failures == 9 and "format" in c.reason
    tool_ev = c.evidence[1]
    assert tool_ev.query == "SELECT ... FROM steps"
    assert tool_ev.numbers["failed_calls"] == 9 and tool_ev.numbers["ok_calls"] == 5


def test_calls_to_a_tool_that_does_not_exist_are_a_harness_matter() -> None:
    rows = runs("globex", "weather", 12, 8)
    calls = [call(r, "get_weather", False, "Error: unknown tool 'get_weather'") for r in rows[:8]]
    calls += [call(r, "weather_lookup", True, "sunny") for r in rows[8:]]
    (c,) = diagnose(rows, calls, CFG).clusters
    assert (c.tool, c.surface) == ("get_weather", "harness") and "routing" in c.reason


@pytest.mark.parametrize(
    ("result", "exit_code", "surface"),
    [
        ("", 2, "tool_schema"),  # usage error of a CLI tool
        ("jq: error: Invalid numeric literal at line 1", 5, "tool_schema"),
        ("permission denied: /etc/shadow", 1, "harness"),
        ("ValidationError: field 'amount' required", None, "tool_schema"),
        ("function 'send_mail' is not declared", None, "harness"),
    ],
)
def test_exit_codes_and_error_texts_map_to_their_surface(
    result: str, exit_code: int | None, surface: str
) -> None:
    rows = runs("acme", "ops", 10, 10)
    calls = [call(r, "shell", False, result, exit_code=exit_code) for r in rows]
    (c,) = diagnose(rows, calls, CFG).clusters
    assert c.surface == surface
    if exit_code is not None:
        assert c.error.startswith(f"exit {exit_code}")


@pytest.mark.parametrize(
    ("result", "failed", "code"),
    [
        ("Error: unknown tool 'x'", True, None),
        ("Traceback (most recent call last):\n  File ...", True, None),
        ("ValueError: bad date", True, None),
        ("command failed, exit code 2", True, 2),
        ("exit status: 0\nall good", False, 0),
        ("No errors found in 3 files.", False, None),
        ("The error rate fell to 2%.", False, None),
    ],
)
def test_failures_reported_as_text_count_without_an_error_flag(
    result: str, failed: bool, code: int | None
) -> None:
    row = ToolCallRow(trajectory_id="t", tool="shell", result=result)
    assert (row.failed, row.code) == (failed, code)


def test_recovered_tool_errors_are_left_alone() -> None:
    """The agent's first call fails, it retries with the right arguments and succeeds: nothing to fix."""
    rows = runs("acme", "booking", 12, 0)
    calls = [call(r, "book", False, "invalid date", step=0) for r in rows]
    calls += [call(r, "book", True, "booked", step=1) for r in rows]
    d = diagnose(rows, calls, CFG)
    assert d.clusters == [] and d.failed == 0


def test_a_failure_across_tenants_and_harnesses_is_a_weights_matter() -> None:
    rows = []
    for tenant, harness in (("initech", "h-a"), ("umbrella", "h-b"), ("hooli", "h-c")):
        rows += runs(tenant, "arith", 10, 9, harness=harness) + runs(tenant, "faq", 10, 0, harness=harness)
    d = diagnose(rows, [], CFG)
    (c,) = d.clusters
    assert (c.tenant, c.task_id, c.surface) == (None, "arith", "weights")
    assert c.trajectories == 30 and c.failures == 27
    assert "3 tenants and 3 harness versions" in c.reason
    assert len(c.evidence) == 4  # the merged numbers and one per tenant


def test_the_same_failure_under_one_harness_stays_per_tenant() -> None:
    cfg = CFG.model_copy(update={"weights_min_harnesses": 2})
    rows = []
    for tenant in ("initech", "umbrella"):
        rows += runs(tenant, "arith", 10, 9, harness="same") + runs(tenant, "faq", 10, 0, harness="same")
    d = diagnose(rows, [], cfg)
    assert sorted((c.tenant, c.surface) for c in d.clusters) == [
        ("initech", "memory"),
        ("umbrella", "memory"),
    ]


def test_no_difference_from_the_rest_of_the_scope_is_noop() -> None:
    rows = runs("acme", "a", 12, 3) + runs("acme", "b", 12, 3)
    d = diagnose(rows, [], CFG)
    assert d.clusters == []
    assert {c.surface for c in d.dismissed} == {"noop"}
    assert all("not significant" in c.reason for c in d.dismissed)


def test_too_few_trajectories_are_dismissed() -> None:
    rows = runs("acme", "a", 3, 3) + runs("acme", "b", 12, 0)
    d = diagnose(rows, [], CFG)
    assert d.clusters == []
    (c,) = d.dismissed
    assert c.task_id == "a" and "too little evidence" in c.reason


def test_a_scope_without_comparison_uses_the_tolerated_rate() -> None:
    rows = runs("solo", "only", 10, 9)
    (c,) = diagnose(rows, [], CFG).clusters
    assert c.evidence[0].numbers["test"] == "wilson_vs_tolerance" and c.surface == "memory"
    # at the tolerated rate itself there is nothing to act on
    assert diagnose(runs("solo", "only", 10, 2), [], CFG).clusters == []


def test_backend_errors_are_noop_with_a_reason() -> None:
    rows = [TrajectoryRow(trajectory_id=f"e{i}", tenant="hooli", task_id="faq", status_code=503, error="unavailable")
            for i in range(8)] + runs("hooli", "faq", 8, 0)  # fmt: skip
    (c,) = diagnose(rows, [], CFG).clusters
    assert (c.surface, c.error, c.signal) == ("noop", "HTTP 503", "error") and "backend" in c.reason


def test_unjudged_trajectories_do_not_count() -> None:
    rows = runs("acme", "a", 10, 8) + [
        TrajectoryRow(trajectory_id=f"u{i}", tenant="acme", task_id="a") for i in range(50)
    ]
    rows += runs("acme", "b", 10, 0)
    d = diagnose(rows, [], CFG)
    (c,) = d.clusters
    assert c.trajectories == 10 and d.judged == 20 and d.trajectories == 70


def test_error_signature_blanks_values() -> None:
    assert error_signature("date '05/01/2026' is not ISO") == error_signature("date '1/2/24' is not ISO")
    assert error_signature("", 127) == "exit 127"


def test_significance_numbers() -> None:
    z = two_proportion_z(9, 10, 1, 10)
    assert z.statistic == pytest.approx(0.8 / math.sqrt(0.25 * 0.2), rel=1e-6)
    assert z.p_value == pytest.approx(1.73e-4, rel=0.02)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-3)
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == (pytest.approx(0.2366, abs=1e-3), pytest.approx(0.7634, abs=1e-3))
    assert wilson_vs_tolerance(10, 10, 0.2, 0.05).p_value < 0.001
    assert wilson_vs_tolerance(2, 10, 0.2, 0.05).p_value == pytest.approx(0.5)
    assert holm([0.01, 0.04, 0.03], 0.05) == [True, False, False]
    assert holm([0.01, 0.02], 0.05) == [True, True]
