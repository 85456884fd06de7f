"""The live-mode step and trajectory builders (``testing.live_steps``) under the import path some tests use."""

from testing.live_steps import step, trajectory

__all__ = ["step", "trajectory"]
