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
from sluice.settings import Settings


class StagesSettings(Settings):
    """The sections the stage worker reads."""

    stages: StagesConfig = Field(default_factory=StagesConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    eligibility: EligibilityPolicy = Field(default_factory=EligibilityPolicy)
    rewards: RewardJoinConfig = Field(default_factory=RewardJoinConfig)
    replay: ReplayConfig = Field(default_factory=ReplayConfig)
    sink_database: Path = Field(Path("var/sluice.duckdb"), description="The sink's DuckDB file.")
