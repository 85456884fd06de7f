"""Config of diagnosis: what counts as a failure, how much evidence a cluster needs, when it spans tenants.

Nested in the control plane's config (``evolve.propose.diagnosis``); a component gets only this model.
"""

from __future__ import annotations

from pydantic import Field

from sluice.frozen import Frozen


class DiagnosisConfig(Frozen):
    window_hours: float | None = Field(
        168.0, gt=0, description="Read trajectories that ended within this many hours (None: all)."
    )
    failure_reward_below: float = Field(
        0.5, description="A rewarded trajectory whose reward is below this failed."
    )
    negative_feedback: list[str] = Field(
        default_factory=lambda: ["thumbs_down", "retry", "delete", "edit"],
        description="Feedback signals that mark a trajectory as failed.",
    )
    min_trajectories: int = Field(5, ge=1, description="Fewest trajectories a cluster must hold to count.")
    min_failures: int = Field(3, ge=1, description="Fewest failed trajectories a cluster must hold.")
    alpha: float = Field(
        0.05, gt=0, lt=1, description="Family-wise significance level over all candidate clusters (Holm)."
    )
    tolerated_failure_rate: float = Field(
        0.2,
        gt=0,
        lt=1,
        description="With no rest of scope to compare with, a cluster counts when its failure rate is "
        "significantly above this.",
    )
    weights_min_tenants: int = Field(
        2, ge=2, description="A failure significant in this many tenants of one task is a weights matter..."
    )
    weights_min_harnesses: int = Field(
        2, ge=1, description="...when its failed trajectories ran under this many harness versions."
    )
    max_samples: int = Field(5, ge=0, description="Trajectory ids kept per cluster as samples.")
