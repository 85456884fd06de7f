"""The base of every component's settings bundle: the shared broker and topic sections, and the folder
the component's relative paths resolve against.

A bundle (``StagesSettings``, ``SinkSettings``, ...) adds its own section and the few values it takes
from other components' sections; the composing config fills it by field name.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from sluice.broker_config import BrokerConfig
from sluice.frozen import Frozen
from sluice.topics_config import TopicsConfig


class Settings(Frozen):
    """The sections every component reads."""

    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    topics: TopicsConfig = Field(default_factory=TopicsConfig)
    base_dir: Path = Field(Path("."), description="Relative paths resolve against it.")

    def path(self, p: Path | str) -> Path:
        """Resolve a config-relative path."""
        p = Path(p)
        return p if p.is_absolute() else self.base_dir / p
