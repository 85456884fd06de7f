"""Creating the worker's topics before it starts, and checking they are co-partitioned.

Faust joins by looking up tables co-partitioned with the input, so every input topic, the tick topic
and every changelog must have ``topics.partitions`` partitions; a mismatch fails fast here.
"""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import NewTopic

from pipeline.stages.exceptions import StagesError
from pipeline.stages.names import changelog_topics, ticks_topic
from pipeline.stages.settings import StagesSettings
from pipeline.topics import admin_client, create_topics, existing_topics


def ensure_stage_topics(cfg: StagesSettings, timeout_s: float = 30.0) -> None:
    create_topics(cfg.broker, cfg.topics, timeout_s)
    internal = [ticks_topic(cfg.topics, cfg.stages), *changelog_topics(cfg.topics, cfg.stages)]
    have = existing_topics(cfg.broker)
    wanted = [
        NewTopic(
            name,
            num_partitions=cfg.topics.partitions,
            replication_factor=cfg.topics.replication_factor,
            config={"cleanup.policy": "compact"}
            if cfg.broker.profile == "kafka" and "changelog" in name
            else {},
        )
        for name in internal
        if name not in have
    ]
    if wanted:
        admin = admin_client(cfg.broker)
        for name, fut in admin.create_topics(wanted, operation_timeout=timeout_s).items():
            try:
                fut.result(timeout=timeout_s)
            except KafkaException as err:
                if "TOPIC_ALREADY_EXISTS" not in str(err):
                    raise StagesError(f"could not create {name}: {err}") from None
    have = existing_topics(cfg.broker)
    for name in internal:
        if have.get(name, cfg.topics.partitions) != cfg.topics.partitions:
            raise StagesError(
                f"topic {name} has {have[name]} partitions, config says {cfg.topics.partitions}: "
                "the stage topics must be co-partitioned"
            )
