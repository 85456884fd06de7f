"""Trajectory API: ``GET /v1/trajectories[/{id}]`` and ``POST .../rewards|feedback|end``."""
