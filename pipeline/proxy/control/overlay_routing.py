"""Control: which overlay and policy version a request gets, and the arm its trajectory falls in (pure).

The scope is the tenant and the task the agent names (``x-sluice-task-id`` or ``metadata.sluice_task_id``):
the assignment of ``tenant/task`` applies when there is one, else the tenant's ``tenant/*``, else none.
The arm is sticky per trajectory: a stable hash of the trajectory id, read as a number in [0, 1), below
the assignment's ``canary_share`` gets the candidate, anything else the control (the active overlay,
None for the bare agent). Every step of a trajectory therefore lands in the same arm while the
assignment stands, a larger share keeps every trajectory the smaller one sent to the candidate, and
every proxy computes the same arm without sharing state.

The policy arm (which model policy version answers) is chosen the same way from the first assignment
that names a policy, looked up from the narrowest scope to ``*/*`` (a pooled policy's canary covers
every tenant). Its hash point is salted (``policy:``), so a trajectory's policy arm is independent of its
overlay arm: an overlay canary and a weights canary running at once each compare like with like.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from sluice.evolution import ALL_TENANTS, Overlay, OverlayArm, OverlayAssignment, PolicyRoutes, scope_key

POLICY_SALT = "policy:"


@dataclass(frozen=True, slots=True)
class OverlayChoice:
    """What one request gets: the overlay to apply (None: the bare agent) and the arm it was routed to."""

    assignment: OverlayAssignment | None
    arm: OverlayArm | None
    overlay: Overlay | None
    policy_version: str | None = None  # the model policy version to ask the server for (None: its default)
    policy_arm: OverlayArm | None = None

    @property
    def overlay_id(self) -> str | None:
        return self.overlay.overlay_id if self.overlay is not None else None


def share_point(trajectory_id: str) -> float:
    """The trajectory's stable position in [0, 1): the first 8 bytes of its SHA-256 over 2**64."""
    digest = hashlib.sha256(trajectory_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def assignment_for(
    assignments: Mapping[str, OverlayAssignment], tenant: str, task_id: str | None
) -> OverlayAssignment | None:
    """The task's assignment when the agent named a task that has one, else the tenant's."""
    if task_id:
        found = assignments.get(scope_key(tenant, task_id))
        if found is not None:
            return found
    return assignments.get(scope_key(tenant, None))


def arm_for(assignment: OverlayAssignment, trajectory_id: str) -> OverlayArm:
    if assignment.candidate is not None and share_point(trajectory_id) < assignment.canary_share:
        return "candidate"
    return "control"


def policy_assignment_for(
    assignments: Mapping[str, OverlayAssignment], tenant: str, task_id: str | None, pooled: bool = True
) -> OverlayAssignment | None:
    """The narrowest assignment that names a model policy: tenant/task, tenant/*, and with ``pooled``
    (the tenant may be served the pooled line) */task, */*."""
    for who in (tenant, ALL_TENANTS) if pooled else (tenant,):
        for task in (task_id, None) if task_id else (None,):
            found = assignments.get(scope_key(who, task))
            if found is not None and (found.active_policy or found.candidate_policy):
                return found
    return None


def policy_for(assignment: OverlayAssignment, trajectory_id: str) -> tuple[OverlayArm, str | None]:
    """The policy arm of a trajectory and the version it is served."""
    if assignment.candidate_policy and share_point(POLICY_SALT + trajectory_id) < assignment.canary_share:
        return "candidate", assignment.candidate_policy
    return "control", assignment.active_policy


def choose_overlay(
    assignments: Mapping[str, OverlayAssignment],
    tenant: str,
    task_id: str | None,
    trajectory_id: str,
    routes: PolicyRoutes | None = None,
) -> OverlayChoice | None:
    """The overlay, the policy version and their arms for one request; None when no assignment covers
    its scope. With ``routes``, a tenant that trains its own line is never routed to the pooled line's
    assignment (``*``): until its own line has a promoted version it gets the server's default, the base
    the trainer never replaces (promotions route by assignment), and so does a tenant that trains none
    when ``routes.untrained`` is ``base``."""
    assignment = assignment_for(assignments, tenant, task_id)
    policy = policy_assignment_for(assignments, tenant, task_id, routes is None or routes.pooled(tenant))
    if assignment is None and policy is None:
        return None
    arm = overlay = None
    if assignment is not None:
        arm = arm_for(assignment, trajectory_id)
        overlay = assignment.candidate if arm == "candidate" else assignment.active
    policy_arm = version = None
    if policy is not None:
        policy_arm, version = policy_for(policy, trajectory_id)
    return OverlayChoice(assignment, arm, overlay, version, policy_arm)
