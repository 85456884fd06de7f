"""What the trainer and the model server read: ``TrainerSettings``, built by the composing config.

Besides its own ``trainer:`` section, the trainer reads the broker and topic sections (it consumes the
training topic, publishes dead letters and policy events) and the folder relative paths resolve against.
"""

from __future__ import annotations

from pydantic import Field

from sluice.settings import Settings
from trainers.config import TrainerConfig


class TrainerSettings(Settings):
    """The sections the trainer reads."""

    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
