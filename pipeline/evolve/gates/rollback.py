"""Rollback and promotion: the one assignment that ends a canary or undoes a promotion.

A canary ends by publishing the scope's assignment without the candidate (rollback: the control arm
keeps serving) or with the candidate as the active overlay (promotion). A promotion is undone by
publishing, again, the assignment it replaced, which the promotion's ledger entry carries in its diff.
"""

from __future__ import annotations

from typing import Any

from sluice.evolution import OverlayAssignment


def end_canary(current: OverlayAssignment, promote: bool, entry_id: str) -> OverlayAssignment:
    return OverlayAssignment(
        tenant=current.tenant,
        task_id=current.task_id,
        active=current.candidate if promote else current.active,
        candidate=None,
        canary_share=0.0,
        proposal_id=current.proposal_id,
        ledger_entry_id=entry_id,
    )


def restore(
    before: dict[str, Any] | None, tenant: str, task_id: str | None, entry_id: str
) -> OverlayAssignment:
    """The assignment a promotion replaced (``diff['before']``), as a new record naming the rollback."""
    if before is None:  # the scope had no assignment: serve the bare agent
        return OverlayAssignment(tenant=tenant, task_id=task_id, ledger_entry_id=entry_id)
    old = OverlayAssignment.model_validate(before)
    return OverlayAssignment(tenant=tenant, task_id=task_id, active=old.active, ledger_entry_id=entry_id)


def diff(before: OverlayAssignment | None, after: OverlayAssignment) -> dict[str, Any]:
    return {
        "before": before.model_dump(mode="json") if before else None,
        "after": after.model_dump(mode="json"),
    }
