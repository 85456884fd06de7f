"""The train topic gate: eligible + rewarded + replay grade at or above the minimum."""

from __future__ import annotations

from governance.eligibility import grade_at_least, train_gate
from sluice.events import EligibilityDecision, Governance, ReplayGrade, Trajectory


def traj(
    decision: str = "train", reward: float | None = 1.0, rewarded: bool = True, grade: str = "approximate"
):
    return Trajectory(
        trajectory_id="t",
        tenant="acme",
        reward=reward,
        rewarded=rewarded,
        governance=Governance(
            eligibility=EligibilityDecision(decision=decision), replay=ReplayGrade(grade=grade)
        ),
    )


def test_gate() -> None:
    assert train_gate(traj(), "approximate") == []
    assert train_gate(traj(grade="deterministic"), "deterministic") == []
    assert train_gate(traj(decision="audit_only"), "approximate") == ["eligibility:audit_only"]
    assert train_gate(traj(reward=None), "approximate") == ["unrewarded"]
    assert train_gate(traj(rewarded=False), "approximate") == ["unrewarded"]
    assert train_gate(traj(grade="approximate"), "deterministic") == [
        "replay_grade:approximate<deterministic"
    ]
    assert train_gate(traj(grade="non_replayable"), "non_replayable") == []


def test_grade_order() -> None:
    assert grade_at_least("deterministic", "approximate")
    assert not grade_at_least("non_replayable", "approximate")
