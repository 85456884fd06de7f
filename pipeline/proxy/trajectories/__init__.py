"""The trajectory API: ``GET /v1/trajectories[/{id}]`` and ``POST /v1/trajectories/{id}/rewards|feedback|end``."""
