"""The last gate before the train topic: eligible, rewarded, and replayable enough.

train_gate(trajectory, min_grade) -> list[str]    # [] = goes to the train topic, else why not
"""

from __future__ import annotations

from sluice.events import ReplayGradeName, Trajectory, grade_at_least


def train_gate(trajectory: Trajectory, min_grade: ReplayGradeName) -> list[str]:
    """Reasons that keep ``trajectory`` off the train topic (empty: it may be trained on)."""
    gov = trajectory.governance
    blockers: list[str] = []
    if gov.eligibility is None or gov.eligibility.decision != "train":
        blockers.append(f"eligibility:{gov.eligibility.decision if gov.eligibility else 'undecided'}")
    if not trajectory.rewarded or trajectory.reward is None:
        blockers.append("unrewarded")
    if gov.replay is None or not grade_at_least(gov.replay.grade, min_grade):
        blockers.append(f"replay_grade:{gov.replay.grade if gov.replay else 'ungraded'}<{min_grade}")
    return blockers
