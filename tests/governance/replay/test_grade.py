"""Replayability grades from the recorded envelope, one rule at a time."""

from __future__ import annotations

import pytest

from governance.config import ReplayConfig
from governance.replay import grade_replayability
from governance.reward_join.tool_results import attach_tool_results
from sluice.events import Action, SamplingParams, ToolCall, Trajectory
from tests.governance.event_builders import metadata
from tests.governance.event_builders import step as _step


def step(index, **kw):
    return _step(index=index, **kw)


CFG = ReplayConfig(nondeterministic_tools=["send_*"])


def grade(*steps, cfg=CFG):
    traj = Trajectory(trajectory_id="traj-1", tenant="acme", steps=attach_tool_results(list(steps)))
    return grade_replayability(traj, cfg)


def call_step(index, name, cid, answers=(), **kw):
    return step(
        index,
        tool_calls=[ToolCall(id=cid, name=name, arguments="{}")],
        tool_answers=list(answers),
        meta=metadata(tool_versions={name: "1"}, **kw),
    )


def test_fully_recorded_greedy_trajectory_is_deterministic() -> None:
    g = grade(step(0), step(1))
    assert (g.grade, g.reasons) == ("deterministic", ["reproducible"])


def test_seed_counts_as_deterministic() -> None:
    g = grade(step(0, meta=metadata(sampling=SamplingParams(temperature=0.8, seed=7))))
    assert g.grade == "deterministic"


@pytest.mark.parametrize(
    ("meta", "reason"),
    [
        ({"sampling": SamplingParams(temperature=0.7)}, "sampling_stochastic:0"),
        ({"sampling": SamplingParams()}, "sampling_stochastic:0"),
        ({"model_version": None}, "model_version_unknown:0"),
        ({"backend_fingerprint": None}, "backend_fingerprint_missing:0"),
        ({"harness_fingerprint": None}, "harness_fingerprint_missing:0"),
        ({"side_effects": ["db_write"]}, "side_effect:db_write@0"),
    ],
)
def test_approximate(meta, reason) -> None:
    g = grade(step(0, meta=metadata(**meta)))
    assert g.grade == "approximate"
    assert reason in g.reasons


def test_tool_without_version_or_result_is_approximate() -> None:
    no_version = step(0, tool_calls=[ToolCall(id="c1", name="search")])
    g = grade(no_version, step(1, tool_answers=[("c1", "r")]))
    assert (g.grade, g.reasons) == ("approximate", ["tool_version_unknown:search@0"])
    unanswered = grade(call_step(0, "search", "c1"), step(1))
    assert unanswered.reasons == ["tool_result_missing:search@0"]
    last_step_call = grade(step(0), call_step(1, "search", "c9"))
    assert last_step_call.grade == "deterministic"  # ended on the call: nothing depended on it


def test_side_effect_tools() -> None:
    recorded = grade(call_step(0, "send_email", "c1"), step(1, tool_answers=[("c1", "sent")]))
    assert (recorded.grade, recorded.reasons) == ("approximate", ["side_effect:send_email@0"])
    unrecorded = grade(call_step(0, "send_email", "c1"), step(1))
    assert unrecorded.grade == "non_replayable"
    assert "side_effect_unrecorded:send_email@0" in unrecorded.reasons


@pytest.mark.parametrize(
    ("steps", "reason"),
    [
        ((), "no_steps"),
        ((step(0, action_result={"error": "upstream 500", "status_code": 500}),), "step_failed:0"),
        ((step(0, action=Action(choices=[])),), "step_without_output:0"),
        ((step(0, meta=metadata(gen_ai={"request_model": ""})),), "model_unknown:0"),
        ((step(0), step(2, prefix=2)), "step_missing:1"),
        ((step(1, prefix=0),), "step_missing:0"),
        ((step(0), step(1, prefix=9)), "history_gap:1"),
    ],
)
def test_non_replayable(steps, reason) -> None:
    g = grade(*steps)
    assert g.grade == "non_replayable"
    assert reason in g.reasons


def test_lowest_ceiling_wins_and_all_reasons_are_kept() -> None:
    g = grade(step(0, meta=metadata(sampling=SamplingParams(temperature=1.0))), step(2, prefix=2))
    assert g.grade == "non_replayable"
    assert {"sampling_stochastic:0", "step_missing:1"} <= set(g.reasons)
