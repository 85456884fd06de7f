"""What one pass of the control plane writes and reports: ledger entries of a proposal (a gate's result,
a decision), and the list of what the pass did (``sluice evolve run`` prints it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from governance.evolve.gates import GateResult
from sluice.evolution import Evidence, LedgerEntry, Proposal


class Action(BaseModel):
    proposal_id: str
    what: str
    detail: str = ""


class PassReport(BaseModel):
    actions: list[Action] = Field(default_factory=list)

    def add(self, proposal_id: str, what: str, detail: str = "") -> None:
        self.actions.append(Action(proposal_id=proposal_id, what=what, detail=detail))


def proposal_entry(p: Proposal, kind: str, **fields: Any) -> LedgerEntry:
    return LedgerEntry(
        proposal_id=p.proposal_id,
        kind=kind,  # type: ignore[arg-type]
        surface=p.surface,
        tenant=p.tenant,
        task_id=p.task_id,
        overlay_id=p.candidate.overlay_id if p.candidate else None,
        policy_version=p.policy_version,
        **fields,
    )


def gate_entry(p: Proposal, result: GateResult, evidence: list[Evidence]) -> LedgerEntry:
    return proposal_entry(
        p,
        "gate",
        gate=result.gate,
        passed=result.passed,
        decision=result.decision,
        summary=result.summary,
        evidence={"numbers": result.numbers, "queries": [e.model_dump() for e in evidence]},
    )
