"""What the sink, its query server and its clients read: ``SinkSettings``, built by the composing config.

Besides its own ``sink:`` section, the sink reads the broker and topic sections (it consumes the audited
and dead-letter topics and publishes erasures), the tenants' API keys (who may query what), the headers
to scrub, the replay grade a training row needs, and, for the erasure receipt, how long the stages remember
erased ids and where the trainer writes checkpoints, pushed weights and pending rebuild plans.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from sinks.config import SinkConfig
from sluice.frozen import Frozen
from sluice.settings import Settings


class TenantKey(Frozen):
    """An agent-facing API key and the tenant it stands for."""

    key: SecretStr
    tenant: str


class SinkSettings(Settings):
    """The sections the sink reads, and the few values it takes from other components' sections."""

    sink: SinkConfig = Field(default_factory=SinkConfig)
    tenant_keys: tuple[TenantKey, ...] = ()
    sensitive_headers: tuple[str, ...] = ()
    keep_erased_s: float = 0.0
    checkpoints_dir: Path = Path("var/trainer/checkpoints")
    policy_push_dir: Path = Path("var/trainer/push")
    rebuild_dir: Path = Path("var/trainer/rebuild")
    policy_servers: tuple[str, ...] = Field(
        (), description="The trainer's policy servers: an erasure stops them serving tainted versions."
    )
