"""The proposer plug point: ``propose(cluster, context) -> Proposal | None``, and what a proposer may read.

A proposer sees the cluster and the rows diagnosis read (its scope's trajectories, tool calls and tool
declarations) and the overlays in force, and drafts a candidate overlay that edits the scope's active one.
When it cannot draft anything it returns None and says why with ``context.note`` (the command prints it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from governance.evolve.diagnosis_rows import ToolCallRow, TrajectoryRow
from pipeline.evolve.diagnose import StoreRows, declared_tool_key
from sluice.evolution import (
    FailureCluster,
    HarnessItem,
    MemoryEntry,
    Overlay,
    OverlayAssignment,
    Proposal,
    Surface,
    ToolSchemaChange,
    scope_key,
)

log = logging.getLogger(__name__)


class Proposer(Protocol):
    name: str
    surfaces: frozenset[Surface]

    def propose(self, cluster: FailureCluster, context: ProposerContext) -> Proposal | None: ...


@dataclass
class ProposerContext:
    rows: StoreRows
    success_reward: float = 0.5  # a trajectory with at least this reward succeeded
    assignments: dict[str, OverlayAssignment] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def note(self, proposer: str, cluster: FailureCluster, reason: str) -> None:
        line = f"{proposer} on {cluster.cluster_id}: {reason}"
        log.info("no proposal: %s", line)
        self.notes.append(line)

    def in_scope(self, cluster: FailureCluster) -> list[TrajectoryRow]:
        """The trajectories of the cluster's tenant (any when it spans tenants) and task."""
        return [
            r
            for r in self.rows.trajectories
            if (cluster.tenant is None or r.tenant == cluster.tenant) and r.task_id == cluster.task_id
        ]

    def succeeded(self, row: TrajectoryRow) -> bool:
        return row.reward is not None and row.reward >= self.success_reward and row.error is None

    def calls_in_scope(self, cluster: FailureCluster) -> list[tuple[TrajectoryRow, ToolCallRow]]:
        rows = {r.trajectory_id: r for r in self.in_scope(cluster)}
        return [(rows[c.trajectory_id], c) for c in self.rows.tool_calls if c.trajectory_id in rows]

    def declared_tool(self, cluster: FailureCluster, tool: str) -> dict[str, Any] | None:
        return self.rows.declared_tools.get(declared_tool_key(cluster.tenant or "", cluster.task_id, tool))

    def active_overlay(self, tenant: str, task_id: str | None) -> Overlay | None:
        assignment = self.assignments.get(scope_key(tenant, task_id))
        return assignment.active if assignment else None


def draft_proposal(
    context: ProposerContext,
    cluster: FailureCluster,
    proposer: str,
    surface: Surface,
    rationale: str,
    memory: list[MemoryEntry] = (),  # type: ignore[assignment]
    harness: list[HarnessItem] = (),  # type: ignore[assignment]
    tools: list[ToolSchemaChange] = (),  # type: ignore[assignment]
) -> Proposal:
    """A proposal whose candidate is the scope's active overlay plus these edits (a new version of it)."""
    tenant = cluster.tenant or "*"
    base = context.active_overlay(tenant, cluster.task_id)
    changed = {t.tool for t in tools}
    candidate = Overlay(
        tenant=tenant,
        task_id=cluster.task_id,
        version=(base.version + 1) if base else 1,
        parent_id=base.overlay_id if base else None,
        memory=[*(base.memory if base else []), *memory],
        harness_add=[*(base.harness_add if base else []), *harness],
        harness_remove=list(base.harness_remove) if base else [],
        tools=[*(t for t in (base.tools if base else []) if t.tool not in changed), *tools],
    )
    return Proposal(
        surface=surface,
        tenant=tenant,
        task_id=cluster.task_id,
        cluster=cluster,
        candidate=candidate,
        base_overlay_id=base.overlay_id if base else None,
        rationale=rationale,
        proposer=proposer,
    )
