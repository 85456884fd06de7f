"""Where each proposal stands, read from the ledger topic: the ledger is the control plane's state.

A proposal is *pending* until a gate rejects it, its canary starts, or it is put aside; a gate that could
not be decided (``undecided``: its backend failed) leaves it pending, and too many such passes *drop* it
(``drop``: nothing was decided about the change itself). A canary is
*running* until it is promoted, *rolled back* (a ``rollback`` decision: it lost to control, its calls
failed more, or an operator undid it) or *aborted* (an ``abort``: the sequential test reached its cap
undecided, or the scope's assignment moved on). Both of the last two end the canary the same way (the
control arm keeps serving); the status says which, and it is the one definition of a rollback. Restarting the loop loses nothing: it reads the ledger
again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.evolve.topic_read import read_all
from sluice.broker_config import BrokerConfig
from sluice.evolution import LedgerEntry, Proposal, scope_key
from sluice.topics_config import TopicsConfig

Status = Literal[
    "pending", "rejected", "canary", "promoted", "rolled_back", "aborted", "set_aside", "dropped", "erased"
]

TERMINAL_DECISIONS = {
    "reject": "rejected",
    "promote": "promoted",
    "rollback": "rolled_back",
    "abort": "aborted",
    "noop": "set_aside",
    "hold": "set_aside",
    "skip": "set_aside",  # a weights candidate superseded by a newer one, or of a line turned down
    "ungated": "promoted",  # a version the trainer served directly (trainer.promotion: direct)
    "erased": "erased",  # a version trained on erased data (or descending from one): never served again
    "drop": "dropped",
}


def read_ledger(broker: BrokerConfig, topics: TopicsConfig, timeout_s: float = 30.0) -> list[LedgerEntry]:
    entries = [
        LedgerEntry.model_validate_json(v) for _k, v in read_all(broker, topics.name("ledger"), timeout_s)
    ]
    return sorted(entries, key=lambda e: e.created_at)


def proposal_from_entry(entry: LedgerEntry) -> Proposal:
    """The proposal a ``kind=proposal`` entry records: the full proposal in ``diff['proposal']``, else
    rebuilt from the entry as `sluice evolve propose --record` writes it (the candidate overlay in
    ``diff['candidate']``, the cluster and the proposer in ``evidence``)."""
    if isinstance(entry.diff.get("proposal"), dict):
        return Proposal.model_validate(entry.diff["proposal"])
    return Proposal.model_validate(
        {
            "proposal_id": entry.proposal_id,
            "surface": entry.surface,
            "tenant": entry.tenant,
            "task_id": entry.task_id,
            "candidate": entry.diff.get("candidate"),
            "cluster": entry.evidence.get("cluster"),
            "base_overlay_id": entry.previous_overlay_id,
            "policy_version": entry.policy_version,
            "rationale": entry.summary,
            "proposer": entry.evidence.get("proposer") or entry.actor,
            "created_at": entry.created_at,
        }
    )


class ProposalState(BaseModel):
    model_config = ConfigDict(frozen=True)

    proposal: Proposal
    status: Status
    entries: list[LedgerEntry] = Field(default_factory=list)
    canary_started_at: datetime | None = None

    @property
    def scope(self) -> str:
        return scope_key(self.proposal.tenant, self.proposal.task_id)

    @property
    def undecided_passes(self) -> int:
        """Passes on which a gate of the proposal could not be decided (its backend failed)."""
        return sum(1 for e in self.entries if e.kind == "decision" and e.decision == "undecided")


def proposal_states(entries: list[LedgerEntry]) -> dict[str, ProposalState]:
    by_id: dict[str, list[LedgerEntry]] = {}
    for e in entries:
        by_id.setdefault(e.proposal_id, []).append(e)
    out: dict[str, ProposalState] = {}
    for pid, group in by_id.items():
        first = next((e for e in group if e.kind == "proposal"), None)
        if first is None:
            continue
        status: Status = "pending"
        started = None
        for e in group:
            if e.kind == "canary" and e.decision == "start":
                status, started = "canary", e.created_at
            elif e.kind in ("decision", "promotion", "rollback") and e.decision in TERMINAL_DECISIONS:
                status = TERMINAL_DECISIONS[e.decision]  # type: ignore[assignment]
        out[pid] = ProposalState(
            proposal=proposal_from_entry(first), status=status, entries=group, canary_started_at=started
        )
    return out


def last_rollback_at(entries: list[LedgerEntry], scope: str) -> datetime | None:
    times = [
        e.created_at for e in entries if e.kind == "rollback" and scope_key(e.tenant, e.task_id) == scope
    ]
    return max(times) if times else None
