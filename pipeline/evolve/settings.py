"""What the control plane's loop reads: ``EvolveSettings``, built by the composing config.

Besides its own ``evolve:`` section, the loop reads the broker and topic sections (the ledger and the
overlay assignments are topics), the proxy section (evaluation calls go through the proxy) and the sink's
settings (the store client it reads evidence with), and the trainer's policy servers (a weights
promotion or rollback is carried out on them).
"""

from __future__ import annotations

from pydantic import Field

from pipeline.evolve.loop_config import EvolveConfig
from pipeline.proxy.config import ProxyConfig
from sinks.settings import SinkSettings
from sluice.settings import Settings


class EvolveSettings(Settings):
    """The sections the control plane's loop reads."""

    evolve: EvolveConfig = Field(default_factory=EvolveConfig)
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    store: SinkSettings = Field(default_factory=SinkSettings)
    policy_servers: list[str] = Field(
        default_factory=list,
        description="Model servers a weights promotion or rollback is carried out on (the trainer's).",
    )
