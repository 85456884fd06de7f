"""Topic creation through the real broker: idempotent, co-partitioned."""

from __future__ import annotations

from confluent_kafka import Producer

from app.config import SluiceConfig
from pipeline.topics import create_topics, existing_topics
from tests.kafka_helpers import read_topic


def test_create_topics_idempotent(config: SluiceConfig) -> None:
    again = create_topics(config.broker, config.topics)
    assert set(again.values()) == {"exists"}
    have = existing_topics(config.broker)
    for name in config.topics.all().values():
        assert have[name] == config.topics.partitions


def test_produce_consume_round_trip(config: SluiceConfig) -> None:
    topic = config.topics.name("steps_raw")
    producer = Producer(config.broker.producer_config())
    for i in range(20):
        producer.produce(topic, key=f"traj-{i % 3}", value=f"v{i}".encode())
    assert producer.flush(10) == 0
    got = read_topic(config.broker, topic, expect=20)
    assert sorted(v for _, v in got) == sorted(f"v{i}".encode() for i in range(20))


def test_the_control_plane_topics_are_created_and_overlays_compacted(config: SluiceConfig) -> None:
    have = existing_topics(config.broker)
    assert config.topics.name("overlays") in have and config.topics.name("ledger") in have
    # the compaction config is sent to Kafka-profile brokers (Tansu takes no topic configs)
    assert config.topics.topic_configs("overlays") == {"cleanup.policy": "compact"}
    assert "cleanup.policy" not in config.topics.topic_configs(
        "ledger"
    )  # entries share their proposal id key: none may be compacted away
