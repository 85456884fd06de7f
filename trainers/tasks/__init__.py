"""Task definitions: what a trajectory is a task of, and the grader it owns (STYLE habit 8)."""
