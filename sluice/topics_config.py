"""Topic names and partitioning: ``TopicsConfig``, the contract every producer and consumer shares."""

from __future__ import annotations

from pydantic import Field

from sluice.frozen import Frozen


class TopicsConfig(Frozen):
    """Topic names and partitioning. Joined topics share one partition count, keyed by trajectory id."""

    prefix: str = Field("sluice.", description="Prepended to every topic name (tests use a unique one).")
    partitions: int = Field(4, ge=1, description="Partition count of every keyed topic.")
    replication_factor: int = Field(1, ge=1)
    raw_retention_hours: float = Field(24.0, gt=0, description="Short retention: raw text is quarantined.")
    steps_raw: str = "steps.raw"
    steps_redacted: str = "steps.redacted"
    rewards_raw: str = "rewards.raw"
    trajectories_audited: str = "trajectories.audited"
    trajectories_train: str = "trajectories.train"
    deadletter: str = "deadletter"
    erasure: str = "erasure"
    policy_events: str = "policy.events"
    overlays: str = Field("overlays", description="Overlay assignments per tenant/task (compacted).")
    ledger: str = Field(
        "evolution.ledger", description="Every proposal, gate and decision of the control plane."
    )

    def name(self, logical: str) -> str:
        """Full topic name of a logical topic, e.g. ``name('steps_raw') -> 'sluice.steps.raw'``."""
        return self.prefix + getattr(self, logical)

    def all(self) -> dict[str, str]:
        return {k: self.name(k) for k in TOPIC_KEYS}

    def topic_configs(self, logical: str) -> dict[str, str]:
        """Per-topic broker configs: short retention for raw, compaction for the audited store."""
        if logical in ("steps_raw", "rewards_raw", "deadletter"):  # dead letters may hold raw bytes
            return {"retention.ms": str(int(self.raw_retention_hours * 3600 * 1000))}
        if logical in ("trajectories_audited", "trajectories_train"):
            return {"cleanup.policy": "compact,delete"}
        if logical == "overlays":  # the latest assignment per scope is all a proxy needs
            return {"cleanup.policy": "compact"}
        return {}


TOPIC_KEYS = (
    "steps_raw",
    "steps_redacted",
    "rewards_raw",
    "trajectories_audited",
    "trajectories_train",
    "deadletter",
    "erasure",
    "policy_events",
    "overlays",
    "ledger",
)
