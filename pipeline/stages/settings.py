"""What the stage worker reads: ``StagesSettings``, built by the composing config.

Besides its own ``stages:`` section, the worker reads the broker and topic sections, the governance
policies it applies (redaction, eligibility, reward joins, replay grading), where the sink's DuckDB file is
(carried join states re-emit only what the store does not hold) and the folder relative paths resolve
against.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from governance.config import EligibilityPolicy, RedactionConfig, ReplayConfig, RewardJoinConfig
from pipeline.stages.config import StagesConfig
from sluice.broker_config import BrokerConfig
from sluice.frozen import Frozen
from sluice.topics_config import TopicsConfig


class StagesSettings(Frozen):
    """The sections the stage worker reads."""

    stages: StagesConfig = Field(default_factory=StagesConfig)
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    topics: TopicsConfig = Field(default_factory=TopicsConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    eligibility: EligibilityPolicy = Field(default_factory=EligibilityPolicy)
    rewards: RewardJoinConfig = Field(default_factory=RewardJoinConfig)
    replay: ReplayConfig = Field(default_factory=ReplayConfig)
    sink_database: Path = Field(Path("var/sluice.duckdb"), description="The sink's DuckDB file.")
    base_dir: Path = Field(Path("."), description="Relative paths resolve against it.")

    def path(self, p: Path | str) -> Path:
        """Resolve a config-relative path."""
        p = Path(p)
        return p if p.is_absolute() else self.base_dir / p
