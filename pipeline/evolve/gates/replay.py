"""Replay check: which of the cluster's trajectories count as evidence (graded deterministic or
approximate); the rest are reported with their grades and not used by the later gates."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from governance.evolve.gates import EVIDENCE_GRADES, GateResult, replay_decision
from pipeline.evolve.evidence import grade_counts, scope_trajectories
from sinks.base import StoreClient
from sluice.evolution import Evidence, Proposal


class ReplayEvidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    result: GateResult
    counted: list[dict[str, Any]] = Field(description="Rows of the trajectories that count, newest first.")
    evidence: list[Evidence]

    @property
    def counted_ids(self) -> list[str]:
        return [r["trajectory_id"] for r in self.counted]


def run_replay(client: StoreClient, proposal: Proposal, min_evidence: int, limit: int) -> ReplayEvidence:
    """The cluster's sample trajectories when it names them, else the scope's newest."""
    cluster = proposal.cluster
    ids = list(cluster.sample_trajectory_ids) if cluster and cluster.sample_trajectory_ids else None
    found, ev = scope_trajectories(client, proposal.tenant, proposal.task_id, ids=ids, limit=limit)
    grades = grade_counts(found)
    result = replay_decision(grades, min_evidence)
    ev = ev.model_copy(update={"numbers": {**ev.numbers, "grades": grades}})
    counted = [r for r in found if r.get("replay_grade") in EVIDENCE_GRADES]
    return ReplayEvidence(result=result, counted=counted, evidence=[ev])
