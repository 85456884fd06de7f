"""The reward and feedback API: ``/v1/trajectories/{id}/rewards|feedback|end``."""
