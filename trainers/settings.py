"""What the trainer and the model server read: ``TrainerSettings``, built by the composing config.

Besides its own ``trainer:`` section, the trainer reads the broker and topic sections (it consumes the
training topic, publishes dead letters and policy events) and the folder relative paths resolve against.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from sluice.broker_config import BrokerConfig
from sluice.frozen import Frozen
from sluice.topics_config import TopicsConfig
from trainers.config import TrainerConfig


class TrainerSettings(Frozen):
    """The sections the trainer reads."""

    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    topics: TopicsConfig = Field(default_factory=TopicsConfig)
    base_dir: Path = Field(Path("."), description="Relative paths resolve against it.")

    def path(self, p: Path | str) -> Path:
        """Resolve a config-relative path."""
        p = Path(p)
        return p if p.is_absolute() else self.base_dir / p
