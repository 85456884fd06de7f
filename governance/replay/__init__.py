"""Replayability grading of assembled trajectories (rules in ``governance.replay.grade``).

from governance.replay import grade_replayability
"""

from governance.replay.grade import DEFAULT_CHECKS, grade_replayability

__all__ = ["DEFAULT_CHECKS", "grade_replayability"]
