"""Proxy settings: ``ProxySettings``, the config sections the proxy reads, built by the composing config.

Besides its own ``proxy:`` section, the proxy reads the broker and topic sections (it publishes steps and
rewards, and tails the erasure and overlay topics), the stage workers' consumer group (on the embedded
broker an event is kept until that group committed past it) and the folder its relative paths resolve
against, and the store's settings (``GET /v1/trajectories`` reads what landed; ``None``: only what this
proxy saw).
"""

from __future__ import annotations

from pydantic import Field

from pipeline.proxy.config import ProxyConfig
from sinks.settings import SinkSettings
from sluice.evolution import PolicyRoutes
from sluice.settings import Settings


class ProxySettings(Settings):
    """The sections the proxy reads."""

    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    stages_group: str = Field("sluice.sluice-stages", description="The stage workers' consumer group.")
    store: SinkSettings | None = Field(
        None, description="The trajectory store, read for landed trajectories (None: not read)."
    )
    routes: PolicyRoutes = Field(
        default_factory=PolicyRoutes,
        description="The trainer's learning scopes, as routing needs them (who may be served the pooled line).",
    )
