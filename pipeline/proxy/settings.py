"""What the proxy reads: ``ProxySettings``, built by the composing config.

Besides its own ``proxy:`` section, the proxy reads the broker and topic sections (it publishes steps and
rewards, and tails the erasure and overlay topics), the stage workers' consumer group (on the embedded
broker an event is kept until that group committed past it) and the folder its relative paths resolve
against.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from pipeline.proxy.config import ProxyConfig
from sluice.broker_config import BrokerConfig
from sluice.frozen import Frozen
from sluice.topics_config import TopicsConfig


class ProxySettings(Frozen):
    """The sections the proxy reads."""

    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    topics: TopicsConfig = Field(default_factory=TopicsConfig)
    stages_group: str = Field("sluice.sluice-stages", description="The stage workers' consumer group.")
    base_dir: Path = Field(Path("."), description="Relative paths resolve against it.")

    def path(self, p: Path | str) -> Path:
        """Resolve a config-relative path."""
        p = Path(p)
        return p if p.is_absolute() else self.base_dir / p
