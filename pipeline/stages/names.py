"""Names the stage worker derives from the config: its Faust app id (the consumer group), its internal
tick topic and its tables' changelog topics. The topic prefix is part of the app id, so two deployments
(or two tests) on one broker never share a group or a changelog."""

from __future__ import annotations

from pipeline.stages.config import StagesConfig
from sluice.topics_config import TopicsConfig

TABLES = ("placeholders", "join_state", "join_steps", "erasure_rules")


def app_id(topics: TopicsConfig, stages: StagesConfig) -> str:
    return f"{topics.prefix}{stages.app_id}"


def ticks_topic(topics: TopicsConfig, stages: StagesConfig) -> str:
    return f"{app_id(topics, stages)}-ticks"


def changelog_topics(topics: TopicsConfig, stages: StagesConfig) -> list[str]:
    """The changelog topic of every table (they hold only redacted text and keyed digests)."""
    return [f"{app_id(topics, stages)}-{table}-changelog" for table in TABLES]
