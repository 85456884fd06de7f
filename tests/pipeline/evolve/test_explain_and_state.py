"""Pure parts of the loop: where a proposal stands from its ledger entries, the recorded chat body, and
the explanation printed from ledger rows."""

from __future__ import annotations

import json
from datetime import timedelta

from pipeline.evolve.evidence import chat_body
from pipeline.evolve.explain import explain
from pipeline.evolve.ledger_state import last_rollback_at, proposal_from_entry, proposal_states
from sluice.events import (
    Action,
    Choice,
    Message,
    Observation,
    SamplingParams,
    StepEvent,
    StepMetadata,
    ToolCall,
    utcnow,
)
from sluice.evolution import LedgerEntry, scope_key
from tests.pipeline.evolve.world import CANDIDATES, TASK, TENANT, proposal


def _entry(pid: str, kind: str, minutes: int, **kw) -> LedgerEntry:  # noqa: ANN003
    return LedgerEntry(proposal_id=pid, kind=kind, surface="memory", tenant=TENANT, task_id=TASK,
                       created_at=utcnow() + timedelta(minutes=minutes), **kw)  # fmt: skip


def test_status_follows_the_ledger() -> None:
    p = proposal(CANDIDATES["fixes"], ["a", "b"])
    pid = p.proposal_id
    first = _entry(pid, "proposal", 0, diff={"proposal": p.model_dump(mode="json")})
    assert proposal_states([first])[pid].status == "pending"
    start = _entry(pid, "canary", 1, decision="start")
    assert proposal_states([first, start])[pid].status == "canary"
    assert proposal_states([first, start])[pid].canary_started_at == start.created_at
    promo = _entry(pid, "promotion", 2, decision="promote")
    back = _entry(pid, "rollback", 3, decision="rollback")
    assert proposal_states([first, start, promo])[pid].status == "promoted"
    assert proposal_states([first, start, promo, back])[pid].status == "rolled_back"
    assert last_rollback_at([first, back], scope_key(TENANT, TASK)) == back.created_at
    assert last_rollback_at([first, back], scope_key("other", None)) is None
    rejected = _entry(pid, "decision", 1, decision="reject")
    assert proposal_states([first, rejected])[pid].status == "rejected"
    assert proposal_states([start]) == {}  # entries without their proposal are not acted on


def test_a_proposal_entry_without_the_full_proposal_is_rebuilt() -> None:
    cand = CANDIDATES["fixes"]
    e = _entry("pr-x", "proposal", 0, diff={"candidate": cand.model_dump(mode="json")}, summary="add facts",
               actor="missing_fact")  # fmt: skip
    got = proposal_from_entry(e)
    assert got.proposal_id == "pr-x" and got.candidate == cand and got.proposer == "missing_fact"


def test_chat_body_rebuilds_the_last_call_of_a_multi_turn_trajectory() -> None:
    def step(i: int, new: list[Message], reply: str, prefix: int) -> StepEvent:
        return StepEvent(trajectory_id="t", tenant=TENANT, step_index=i,
                         observation=Observation(messages=new, prefix_message_count=prefix,
                                                 tools=[{"type": "function", "function": {"name": "f"}}] if i == 0 else None),
                         action=Action(choices=[Choice(message=Message(role="assistant", content=reply))]))  # fmt: skip

    steps = [
        step(0, [Message(role="system", content="S"), Message(role="user", content="one")], "r1", 0),
        step(1, [Message(role="user", content="two")], "r2", 3),
    ]
    body = chat_body(steps)
    assert [m["content"] for m in body["messages"]] == ["S", "one", "r1", "two"]
    assert body["tools"][0]["function"]["name"] == "f"
    assert chat_body([]) is None


def test_chat_body_of_a_tool_cluster_is_the_call_that_called_the_tool() -> None:
    """A forced call, the tool's error sent back, a closing answer: the tool's call is rebuilt, forced."""
    tools = [{"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}]
    forced = {"type": "function", "function": {"name": "book"}}
    call = Message(
        role="assistant", tool_calls=[ToolCall(id="c1", name="book", arguments='{"date": "soon"}')]
    )
    meta = StepMetadata(sampling=SamplingParams.model_validate({"max_tokens": 24, "tool_choice": forced}))
    steps = [
        StepEvent(trajectory_id="t", tenant=TENANT, step_index=0, metadata=meta,
                  observation=Observation(messages=[Message(role="user", content="book it")], tools=tools),
                  action=Action(choices=[Choice(message=call)])),
        StepEvent(trajectory_id="t", tenant=TENANT, step_index=1,
                  observation=Observation(messages=[Message(role="tool", tool_call_id="c1", content="Error: bad")],
                                          prefix_message_count=2),
                  action=Action(choices=[Choice(message=Message(role="assistant", content="Sorry."))])),
    ]  # fmt: skip
    assert chat_body(steps)["messages"][-1]["role"] == "tool"  # the last call by default
    body = chat_body(steps, tool="book")
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["tools"] == tools and body["tool_choice"] == forced and body["max_tokens"] == 24
    assert chat_body(steps, tool="other") is None


def test_explain_tells_what_why_evidence_gates_and_outcome() -> None:
    p = proposal(CANDIDATES["fixes"], ["a"])
    rows = [
        {"proposal_id": p.proposal_id, "kind": "proposal", "surface": "memory", "tenant": TENANT, "task_id": TASK,
         "summary": "add facts", "evidence": "{}", "diff": json.dumps({"proposal": p.model_dump(mode="json")}),
         "created_at": "2026-12-02 10:00:00", "actor": "missing_fact"},
        {"proposal_id": p.proposal_id, "kind": "gate", "gate": "shadow", "passed": True, "decision": "pass",
         "surface": "memory", "tenant": TENANT, "task_id": TASK, "summary": "candidate 1.000 vs control 0.000",
         "evidence": json.dumps({"numbers": {"prompts": 6, "gain": 1.0}}), "diff": "{}",
         "created_at": "2026-12-02 10:01:00", "actor": "sluice-evolve"},
        {"proposal_id": p.proposal_id, "kind": "decision", "gate": "offline", "passed": None,
         "decision": "undecided", "surface": "memory", "tenant": TENANT, "task_id": TASK,
         "summary": "offline: the backend failed", "evidence": json.dumps({"attempts": 3}), "diff": "{}",
         "created_at": "2026-12-02 10:02:00", "actor": "sluice-evolve"},
        {"proposal_id": p.proposal_id, "kind": "rollback", "decision": "rollback", "surface": "memory",
         "tenant": TENANT, "task_id": TASK, "summary": "candidate loses to control",
         "evidence": json.dumps({"numbers": {"reward": {"control_mean": 0.5, "candidate_mean": 0.0}}}),
         "diff": json.dumps({"before": None, "after": {"active": None, "candidate": None, "canary_share": 0.0}}),
         "created_at": "2026-12-02 11:00:00", "actor": "sluice-evolve"},
    ]  # fmt: skip
    out = explain(rows)
    assert f"proposal {p.proposal_id}" in out and "scope=acme/support" in out
    assert "+ memory: The promo code is SUNNY24." in out
    assert "the answers lack company facts" in out
    assert "[shadow] passed -> pass" in out and "prompts=6" in out
    assert "-> rollback" in out and "candidate_mean=0.0" in out
    assert "decision [offline] -> undecided" in out  # neither passed nor failed
    assert explain([]) == "no ledger entries for this proposal"


def test_a_proposal_recorded_by_propose_is_read_back() -> None:
    from app.commands.evolve import ledger_entry

    p = proposal(CANDIDATES["fixes"], ["a", "b"])
    got = proposal_from_entry(ledger_entry(p))
    assert got.proposal_id == p.proposal_id and got.candidate == p.candidate
    assert got.cluster == p.cluster and got.proposer == p.proposer
