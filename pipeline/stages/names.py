"""Names the stage worker derives from the config: its Faust app id (the consumer group), its internal
tick topic and its tables' changelog topics. The topic prefix is part of the app id, so two deployments
(or two tests) on one broker never share a group or a changelog."""

from __future__ import annotations

from app.config import SluiceConfig

TABLES = ("placeholders", "join_state", "join_steps", "erasure_rules")


def app_id(cfg: SluiceConfig) -> str:
    return f"{cfg.topics.prefix}{cfg.stages.app_id}"


def ticks_topic(cfg: SluiceConfig) -> str:
    return f"{app_id(cfg)}-ticks"


def changelog_topics(cfg: SluiceConfig) -> list[str]:
    """The changelog topic of every table (they hold only redacted text and keyed digests)."""
    return [f"{app_id(cfg)}-{table}-changelog" for table in TABLES]
