"""Rule proposers on realistic evidence, the model proposer's strict parsing, and the model proposer
against a real OpenAI-compatible server (the echo backend as a process)."""

from __future__ import annotations

import json
import re

import pytest

from governance.evolve.diagnosis import diagnose
from governance.evolve.diagnosis_config import DiagnosisConfig
from governance.evolve.diagnosis_rows import ToolCallRow, TrajectoryRow
from infra.broker import free_port
from pipeline.evolve.config import ModelProposerConfig, ProposersConfig
from pipeline.evolve.diagnose import StoreRows
from pipeline.evolve.proposers.base import ProposerContext
from pipeline.evolve.proposers.missing_fact import MissingFactProposer
from pipeline.evolve.proposers.model import DraftRejected, ModelProposer, parse_draft
from pipeline.evolve.proposers.registry import build_proposers, draft_proposals
from pipeline.evolve.proposers.tool_format import ToolFormatProposer, value_shape
from sluice.evolution import MemoryEntry, Overlay, OverlayAssignment
from tests.pipeline.evolve.conftest import ECHO_KEY

CFG = DiagnosisConfig(min_trajectories=5, min_failures=3)
BOOK = {
    "type": "function",
    "function": {
        "name": "book_meeting",
        "parameters": {
            "type": "object",
            "properties": {
                "date": {"type": "string", "description": "Day of the meeting."},
                "room": {"type": "string"},
            },
            "required": ["date", "room"],
        },
    },
}


def booking_rows(declared: bool = True) -> StoreRows:
    """Agents writing dates three wrong ways; the tool accepts ISO dates only."""
    rows, calls = [], []
    bad = [
        "05/01/2026",
        "5/2/2026",
        "May 3, 2026",
        "03.05.2026",
        "2026/05/04",
        "05-06-2026",
        "7 May 2026",
        "05/08/26",
    ]
    for i, date in enumerate(bad):
        rows.append(TrajectoryRow(trajectory_id=f"b{i}", tenant="globex", task_id="booking", reward=0.0))
        calls.append(ToolCallRow(trajectory_id=f"b{i}", tool="book_meeting", is_error=True,
                                 arguments=json.dumps({"date": date, "room": "blue"}),
                                 result=f"ValueError: invalid date {date!r}: must be in the format YYYY-MM-DD."))  # fmt: skip
    for i, date in enumerate(["2026-05-11", "2026-06-02", "2026-07-30", "2026-12-01", "2027-01-15"]):
        rows.append(TrajectoryRow(trajectory_id=f"g{i}", tenant="globex", task_id="booking", reward=1.0))
        calls.append(ToolCallRow(trajectory_id=f"g{i}", tool="book_meeting",
                                 arguments=json.dumps({"date": date, "room": ["blue", "red", "green"][i % 3]}),
                                 result=f"booked for {date}"))  # fmt: skip
    tools = {"globex/booking/book_meeting": BOOK} if declared else {}
    return StoreRows(trajectories=rows, tool_calls=calls, declared_tools=tools, queries={})


def cluster_of(rows: StoreRows):  # noqa: ANN201
    (c,) = diagnose(rows.trajectories, rows.tool_calls, CFG).clusters
    return c


def test_value_shape() -> None:
    assert value_shape("2026-05-11") == r"^\d{4}-\d{2}-\d{2}$"
    assert value_shape("AB-12.x") == r"^[A-Z]{2}-\d{2}\.[a-z]$"


def test_tool_format_constrains_the_declared_parameter() -> None:
    rows = booking_rows()
    cluster = cluster_of(rows)
    assert cluster.surface == "tool_schema"
    p = ToolFormatProposer().propose(cluster, ProposerContext(rows=rows))
    assert p is not None and p.surface == "tool_schema" and p.proposer == "tool_format"
    (change,) = p.candidate.tools
    date = change.parameters["properties"]["date"]
    # the constrained schema accepts every value that worked and none that failed
    for good in ("2026-05-11", "2027-01-15", "1999-12-31"):
        assert re.fullmatch(date["pattern"], good)
    for bad in ("05/01/2026", "May 3, 2026", "2026/05/04", "05-06-2026"):
        assert not re.fullmatch(date["pattern"], bad)
    assert "YYYY-MM-DD" in date["description"] and date["description"].startswith("Day of the meeting.")
    # the rest of the declaration is kept: room is untouched and still required
    assert change.parameters["properties"]["room"] == {"type": "string"} and change.parameters[
        "required"
    ] == ["date", "room"]
    assert "date" in p.rationale


def test_tool_format_without_a_declaration_drafts_a_harness_item() -> None:
    rows = booking_rows(declared=False)
    p = ToolFormatProposer().propose(cluster_of(rows), ProposerContext(rows=rows))
    assert p is not None and p.surface == "harness"
    (item,) = p.candidate.harness_add
    assert (
        "`book_meeting`" in item.text and "`date`" in item.text and re.search(r"\d{4}-\d{2}-\d{2}", item.text)
    )


def failing_only_rows(tool: dict, key: str, values: list[str], error: str) -> StoreRows:
    """Every call to the tool failed (no successful value to learn a shape from)."""
    name = tool["function"]["name"]
    rows = [
        TrajectoryRow(trajectory_id=f"f{i}", tenant="umbrella", task_id="t", reward=0.0) for i in range(6)
    ]
    calls = [ToolCallRow(trajectory_id=f"f{i}", tool=name, arguments=json.dumps({key: values[i % len(values)]}),
                         result=error.format(value=values[i % len(values)])) for i in range(6)]  # fmt: skip
    return StoreRows(
        trajectories=rows, tool_calls=calls, declared_tools={f"umbrella/t/{name}": tool}, queries={}
    )


def test_tool_format_takes_the_format_the_tool_states_when_no_call_succeeded() -> None:
    tool = {"type": "function", "function": {"name": "schedule", "parameters": {
        "type": "object", "properties": {"when": {"type": "string", "description": "When."}}}}}  # fmt: skip
    sentences = ["I would like it on Monday please", "The meeting is next week", "tomorrow at noon"]
    rows = failing_only_rows(tool, "when", sentences, "Error: when {value!r} is not in the format DD/MM/YYYY")
    cluster = cluster_of(rows)
    assert cluster.surface == "tool_schema"
    p = ToolFormatProposer().propose(cluster, ProposerContext(rows=rows))
    assert p is not None and p.surface == "tool_schema"
    (change,) = p.candidate.tools
    when = change.parameters["properties"]["when"]
    assert re.fullmatch(when["pattern"], "14/03/2026") and not re.fullmatch(when["pattern"], "2026-03-14")
    assert not any(re.fullmatch(when["pattern"], v) for v in sentences)
    assert "none succeeded" in p.rationale and when["description"].startswith("When.")


def test_tool_format_turns_a_stated_list_into_an_enum() -> None:
    tool = {"type": "function", "function": {"name": "open_ticket", "parameters": {
        "type": "object", "required": ["priority"], "properties": {"priority": {"type": "string"}}}}}  # fmt: skip
    rows = failing_only_rows(tool, "priority", ["very bad", "ASAP!!"],
                             "error: priority {value!r} must be one of: low, normal, high or urgent.")  # fmt: skip
    p = ToolFormatProposer().propose(cluster_of(rows), ProposerContext(rows=rows))
    assert p is not None
    (change,) = p.candidate.tools
    assert change.parameters["properties"]["priority"]["enum"] == ["low", "normal", "high", "urgent"]
    assert change.parameters["required"] == ["priority"]


def test_tool_format_with_errors_that_state_nothing_says_why() -> None:
    tool = {"type": "function", "function": {"name": "open_ticket", "parameters": {
        "type": "object", "properties": {"priority": {"type": "string"}}}}}  # fmt: skip
    rows = failing_only_rows(tool, "priority", ["very bad"], "error: priority {value!r} is invalid")
    ctx = ProposerContext(rows=rows)
    assert ToolFormatProposer().propose(cluster_of(rows), ctx) is None
    assert "state no format" in ctx.notes[0]


def test_routing_names_the_tool_that_worked() -> None:
    rows, calls = [], []
    for i in range(8):
        rows.append(TrajectoryRow(trajectory_id=f"w{i}", tenant="globex", task_id="weather", reward=0.0))
        calls.append(ToolCallRow(trajectory_id=f"w{i}", tool="get_weather", is_error=True,
                                 result="unknown tool 'get_weather'", arguments='{"city": "Oslo"}'))  # fmt: skip
    for i in range(6):
        rows.append(TrajectoryRow(trajectory_id=f"k{i}", tenant="globex", task_id="weather", reward=1.0))
        calls.append(
            ToolCallRow(
                trajectory_id=f"k{i}", tool="weather_lookup", result="rain", arguments='{"city": "Rome"}'
            )
        )
    store = StoreRows(trajectories=rows, tool_calls=calls, queries={})
    cluster = cluster_of(store)
    p = ToolFormatProposer().propose(cluster, ProposerContext(rows=store))
    assert p is not None and p.surface == "harness"
    assert (
        "`weather_lookup`" in p.candidate.harness_add[0].text
        and "get_weather" in p.candidate.harness_add[0].text
    )


def promo_rows(critique: str | None = None, winners: int = 2) -> StoreRows:
    rows = []
    for i in range(10):
        rows.append(TrajectoryRow(trajectory_id=f"f{i}", tenant="acme", task_id="promo", reward=0.0,
                                  question="Any discount code?", final_answer="Sorry, I don't know any current code.",
                                  critiques=[critique] if critique and i < 3 else []))  # fmt: skip
    for i in range(winners):
        rows.append(TrajectoryRow(trajectory_id=f"s{i}", tenant="acme", task_id="promo", reward=1.0,
                                  question="Any discount code?",
                                  final_answer="Sure! Use code SPRING24 at checkout. Sorry, I don't know any current code."
                                  if i == 0 else "Use code SPRING24 at checkout."))  # fmt: skip
    rows += [
        TrajectoryRow(trajectory_id=f"o{i}", tenant="acme", task_id="other", reward=1.0) for i in range(10)
    ]
    return StoreRows(trajectories=rows, tool_calls=[], queries={})


def test_missing_fact_from_successful_answers() -> None:
    rows = promo_rows()
    cluster = cluster_of(rows)
    assert cluster.surface == "memory"
    p = MissingFactProposer().propose(cluster, ProposerContext(rows=rows))
    assert p is not None and p.surface == "memory"
    (entry,) = p.candidate.memory
    # the sentence both successes share, not the one a failure also said
    assert "Use code SPRING24 at checkout." in entry.text and "don't know" not in entry.text
    assert "Any discount code?" in entry.text


def test_missing_fact_prefers_the_operators_critique() -> None:
    rows = promo_rows(critique="The spring promo code is SPRING24; it is valid until May 31.")
    p = MissingFactProposer().propose(cluster_of(rows), ProposerContext(rows=rows))
    assert p.candidate.memory[0].text == "The spring promo code is SPRING24; it is valid until May 31."


def test_missing_fact_with_nothing_to_go_on_says_why() -> None:
    rows = promo_rows(winners=0)
    ctx = ProposerContext(rows=rows)
    assert MissingFactProposer().propose(cluster_of(rows), ctx) is None
    assert "no critique" in ctx.notes[0]


def test_candidates_edit_the_active_overlay() -> None:
    rows = promo_rows()
    active = Overlay(tenant="acme", task_id="promo", version=3, memory=[MemoryEntry(text="Shop opens at 9.")])
    ctx = ProposerContext(
        rows=rows,
        assignments={"acme/promo": OverlayAssignment(tenant="acme", task_id="promo", active=active)},
    )
    p = MissingFactProposer().propose(cluster_of(rows), ctx)
    assert p.base_overlay_id == active.overlay_id
    assert p.candidate.parent_id == active.overlay_id and p.candidate.version == 4
    assert [m.text for m in p.candidate.memory][0] == "Shop opens at 9." and len(p.candidate.memory) == 2


def test_registry_builds_from_config_and_skips_noop() -> None:
    assert [p.name for p in build_proposers(ProposersConfig())] == ["tool_format", "missing_fact"]
    with pytest.raises(ValueError, match="proposers.model is not set"):
        ProposersConfig(enabled=["model"])
    rows = booking_rows()
    proposals = draft_proposals(
        [cluster_of(rows)], ProposerContext(rows=rows), build_proposers(ProposersConfig())
    )
    assert [p.proposer for p in proposals] == ["tool_format"]


def _call(name: str, args: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": None,
                                     "tool_calls": [{"function": {"name": name, "arguments": args}}]}}]}  # fmt: skip


def test_parse_draft_is_strict() -> None:
    ok = parse_draft(
        _call("draft_memory_entry", '{"text": "The promo code is SPRING24."}'), "draft_memory_entry", 400
    )
    assert ok == "The promo code is SPRING24."
    content = {
        "choices": [{"message": {"content": '```json\n{"text": "Say dates as YYYY-MM-DD always."}\n```'}}]
    }
    assert parse_draft(content, "draft_harness_item", 400) == "Say dates as YYYY-MM-DD always."
    bad = [
        (_call("other", '{"text": "a b c"}'), "not draft_memory_entry"),
        (_call("draft_memory_entry", '{"text": "x y z", "extra": 1}'), 'not {"text": string}'),
        (_call("draft_memory_entry", "not json"), 'not {"text": string}'),
        (_call("draft_memory_entry", '{"text": "I\'m sorry, I cannot help with that."}'), "refusal"),
        (_call("draft_memory_entry", json.dumps({"text": "word " * 200})), "characters"),
        (_call("draft_memory_entry", '{"text": "@@ ## 1"}'), "fewer than three words"),
        ({"choices": [{"message": {"content": "Sure, here is a fact: promo SPRING24"}}]}, "neither"),
        (_call("draft_memory_entry", '{"text": "The code is SPRING24.<|im_end|>"}'), "chat-template tokens"),
        (
            _call("draft_memory_entry", '{"text": "- failed: Q: Any code? A: I do not know."}'),
            "copies a line",
        ),
        ({"error": "x"}, "no choices"),
    ]
    for body, why in bad:
        with pytest.raises(DraftRejected, match=re.escape(why)):
            parse_draft(body, "draft_memory_entry", 400)


def test_model_proposer_against_a_real_server(echo_url: str) -> None:
    """The echo backend answers a forced call with its arguments filled from the prompt: the proposal
    holds exactly what the server answered, sent as a forced draft_memory_entry call with the key."""
    rows = promo_rows()
    cluster = cluster_of(rows)
    cfg = ModelProposerConfig(base_url=echo_url, model="echo-1", api_key=ECHO_KEY)
    ctx = ProposerContext(rows=rows)
    p = ModelProposer(cfg).propose(cluster, ctx)
    assert p is not None, ctx.notes
    assert p.surface == "memory" and p.proposer == "model:echo-1"
    # the echo backend fills a string argument with the first 24 characters of the user message
    assert p.candidate.memory[0].text == "Scope: tenant acme, task"


def test_model_proposer_bad_answers_give_no_proposal(echo_url: str) -> None:
    rows = promo_rows()
    cluster = cluster_of(rows)
    ctx = ProposerContext(rows=rows)
    assert (
        ModelProposer(ModelProposerConfig(base_url=echo_url, model="error-500", api_key=ECHO_KEY)).propose(
            cluster, ctx
        )
        is None
    )
    assert "HTTP 500" in ctx.notes[-1]
    assert (
        ModelProposer(ModelProposerConfig(base_url=echo_url, model="echo-1", api_key="wrong")).propose(
            cluster, ctx
        )
        is None
    )
    assert "HTTP 401" in ctx.notes[-1] and "wrong" not in ctx.notes[-1]
    dead = f"http://127.0.0.1:{free_port()}/v1"
    assert (
        ModelProposer(ModelProposerConfig(base_url=dead, model="m", timeout_s=2)).propose(cluster, ctx)
        is None
    )
    assert "did not answer" in ctx.notes[-1]
