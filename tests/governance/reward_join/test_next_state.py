"""Rewards read from the next state: tool errors, retries and corrections mark the step they judge."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from governance.config import EligibilityPolicy, NextStateConfig, ReplayConfig, RewardJoinConfig, TenantPolicy
from governance.reward_join import apply_end, apply_step, build_emission, plan_emission
from governance.reward_join.next_state import harvest_next_state, is_correction, is_tool_error
from governance.reward_join.tool_results import attach_tool_results
from sluice.events import ToolCall, ToolResult
from tests.governance.event_builders import T0, end, metadata, step

POLICY = EligibilityPolicy(tenants={"acme": TenantPolicy(training_opt_in=True, retention_days=90)})
NS = NextStateConfig()


def emit(events, cfg: RewardJoinConfig):  # noqa: ANN001, ANN201
    state, steps = None, {}
    for e in events:
        tr = (
            apply_step(state, e, 1.0, cfg, POLICY)
            if e.event_type == "step"
            else apply_end(state, e, 1.0, POLICY)
        )
        if tr.store_step:
            steps[e.event_id] = e
        state = tr.state
    plan = plan_emission(state, cfg, 10_000.0)
    assert plan is not None
    return build_emission(
        state, [steps[i] for i in state.stored_step_ids], plan, cfg, POLICY, ReplayConfig(), 10.0
    )


def calling(index: int, cid: str, answers=()):  # noqa: ANN001, ANN201
    return step(index=index, tool_calls=[ToolCall(id=cid, name="search", arguments="{}")], tool_answers=list(answers),
                meta=metadata(tool_versions={"search": "1"}), text=f"question {index}")  # fmt: skip


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (ToolResult(content="42", is_error=True), True),
        (ToolResult(content="done", exit_code=2), True),
        (ToolResult(content='{"error": "rate limited"}'), True),
        (ToolResult(content='{"error": {"code": 404, "message": "no such file"}}'), True),
        (ToolResult(content='{"status": "error", "detail": "x"}'), True),
        (ToolResult(content='{"status": 503}'), True),
        (ToolResult(content='{"ok": false}'), True),
        (ToolResult(content='{"exit_code": 1, "stdout": ""}'), True),
        (ToolResult(content=[{"type": "text", "text": "boom", "is_error": True}]), True),
        (ToolResult(content='{"error": null, "result": 3}'), False),
        (ToolResult(content='{"status": "ok", "exit_code": 0}'), False),
        (ToolResult(content="Error handling is described in chapter 3"), False),
        (ToolResult(content="{not json"), False),
    ],
)
def test_tool_errors_in_the_tools_own_formats(result: ToolResult, error: bool) -> None:
    assert is_tool_error(result) is error


def test_a_tool_error_marks_the_calling_step_with_its_source_weight_and_reason() -> None:
    cfg = RewardJoinConfig(combine="weighted", source_weights={"harvest:tool_error": 1.0})
    events = [
        calling(0, "c1"),
        calling(1, "c2", answers=[("c1", '{"error": "city not found"}')]),
        step(index=2, tool_answers=[("c2", '{"temp": 21}')], text="thanks"),
        end(),
    ]
    emission = emit(events, cfg)
    traj = emission.trajectory
    [harvested] = [r for s in traj.steps for r in s.rewards]
    assert (harvested.name, harvested.source, harvested.step_index, harvested.value) == (
        "tool_error", "harvest:tool_error", 0, 0.0,
    )  # fmt: skip
    assert harvested.critique == "search" and traj.steps[0].rewards == [harvested]
    assert traj.reward == 0.0  # weighted by its source like any other
    assert "harvested:tool_error@0" in traj.governance.eligibility.reasons
    again = emit(events, cfg).trajectory  # a re-assembly gives the same reward ids
    assert [r.reward_id for s in again.steps for r in s.rewards] == [harvested.reward_id]


def test_each_signal_is_off_by_config() -> None:
    off = NextStateConfig(tool_error=False, retry=False, correction=False)
    steps = attach_tool_results([calling(0, "c1"), step(index=1, tool_answers=[("c1", '{"error": "x"}')],
                                                          text="No, it's wrong")])  # fmt: skip
    assert harvest_next_state(steps, off) == []
    assert {r.name for r in harvest_next_state(steps, NS)} == {"tool_error", "correction"}


def test_a_retry_re_sends_the_question_without_the_answer_within_the_window() -> None:
    first = step(index=0, text="What is the capital of Peru?", prefix=0)
    resent = step(
        index=1, text="What is the capital of Peru?", prefix=0, created_at=T0 + timedelta(seconds=20)
    )
    [retry] = harvest_next_state([first, resent], NS)
    assert (retry.name, retry.source, retry.step_index) == ("retry", "harvest:retry", 0)
    late = resent.model_copy(update={"created_at": T0 + timedelta(seconds=NS.retry_window_s + 1)})
    assert harvest_next_state([first, late], NS) == []
    # the answer carried forward and the same words said again: a conversation, not a retry
    continued = step(index=1, text="What is the capital of Peru?", prefix=2)
    assert harvest_next_state([first, continued], NS) == []
    other = step(index=1, text="And of Chile?", prefix=0)
    assert harvest_next_state([first, other], NS) == []


@pytest.mark.parametrize(
    ("text", "correction"),
    [
        ("That's wrong, the answer is 7.", True),
        ("no, it's 7", True),
        ("Incorrect. Try again", True),
        ("You are not right about that", True),
        ("Nein, das stimmt nicht", True),
        ("Das ist falsch.", True),
        ("Non, c'est Lima", True),
        ("c'est faux", True),
        ("No, es Lima", True),
        ("Eso está mal", True),
        ("Não, é Lima", True),
        ("Isso está errado", True),
        ("Thanks, that is right", False),
        ("No problem, what about Chile?", False),
        ("Is nothing wrong with the tests?", False),
    ],
)
def test_corrections_by_pattern_in_the_covered_languages(text: str, correction: bool) -> None:
    assert is_correction(text, NS) is correction


def test_a_correction_marks_the_answer_before_it() -> None:
    steps = [step(index=0, text="capital of Peru?"), step(index=1, text="No, that's wrong: it is Lima")]
    [r] = harvest_next_state(steps, NS)
    assert (r.name, r.source, r.step_index, r.critique) == ("correction", "harvest:correction", 0, None)


def test_a_pattern_that_does_not_compile_fails_the_config() -> None:
    with pytest.raises(ValidationError, match="does not compile"):
        NextStateConfig(correction_patterns=["(unclosed"])
