"""Errors of the trainer package, all under the one Sluice root error."""

from __future__ import annotations

from sluice.errors import SluiceError


class TrainerError(SluiceError):
    """Something in the trainer failed on purpose-checked grounds."""


class BackendUnavailable(TrainerError):
    """A rollout backend was asked for but cannot run here (e.g. vLLM without CUDA)."""


class TaskError(TrainerError):
    """A trajectory cannot become a training task. ``code`` is the short reason counted in metrics
    ("no prompt", "unknown model", "prompt too long"); the message adds the detail."""

    def __init__(self, code: str, detail: str = "") -> None:
        self.code = code
        super().__init__(f"{code}: {detail}" if detail else code)


class RewardError(TrainerError):
    """A reward function could not score a completion (raised, timed out, or had nothing to score)."""


class CheckpointError(TrainerError):
    """A checkpoint is missing or unreadable."""


class RequestError(TrainerError):
    """A model-server request is invalid (HTTP 400)."""
