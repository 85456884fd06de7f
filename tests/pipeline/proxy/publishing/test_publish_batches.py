"""The proxy's producer puts many step events in one record batch on the embedded broker (Tansu), and every
end offset Sluice reads still counts each of them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from infra.broker import LocalBroker
from pipeline.proxy.config import ProxyConfig
from pipeline.proxy.publishing.kafka_publisher import KafkaPublisher
from pipeline.topic_ends import end_offsets
from pipeline.topics import create_topics
from sluice.broker_config import BrokerConfig
from sluice.topics_config import TopicsConfig
from tests.kafka_helpers import read_topic


def _listed_end(broker: BrokerConfig, topic: str, partition: int) -> int:
    """The broker's own ListOffsets("latest") answer."""
    consumer = Consumer(broker.consumer_config("batches-listed"))
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()


def test_bursts_share_batches_and_every_record_is_counted(broker: LocalBroker, tmp_path: Path) -> None:
    cfg = BrokerConfig(bootstrap_servers=broker.bootstrap_servers, profile="tansu", embedded=False)
    topics = TopicsConfig(prefix=f"batches{int(time.time() * 1000) % 10**8}.", partitions=1)
    create_topics(cfg, topics)
    topic = topics.name("steps_raw")
    bursts = [7, 1, 12]

    async def scenario() -> int:
        pub = KafkaPublisher(cfg, tmp_path / "wal", ProxyConfig(publish_linger_ms=50))
        await pub.start()
        try:
            sent = 0
            for n, size in enumerate(bursts):
                for i in range(size):
                    pub.publish(topic, f"traj-{i % 4}", f"{n}.{i}".encode())
                sent += size
                deadline = time.monotonic() + 30
                while pub.stats().delivered < sent:
                    assert time.monotonic() < deadline, "events not acknowledged"
                    await asyncio.sleep(0.02)
            return sent
        finally:
            await pub.close()

    total = asyncio.run(scenario())
    assert total == sum(bursts)
    # Tansu's ListOffsets stops at the newest batch's first record + 1: short, so that batch held several
    # records (the burst shared one produce request)
    assert _listed_end(cfg, topic, 0) < total
    assert end_offsets(cfg, [(topic, 0)]) == {(topic, 0): total}  # what drains, status and recovery read
    records = read_topic(cfg, topic, expect=total, idle_s=0.3)
    assert [v.decode() for _, v in records] == [
        f"{n}.{i}" for n, size in enumerate(bursts) for i in range(size)
    ]
