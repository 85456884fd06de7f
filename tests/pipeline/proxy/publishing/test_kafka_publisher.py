"""The publisher against a real broker that is not there yet: bounded memory, spool, ordered replay."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from infra.broker import LocalBroker, free_port
from pipeline.proxy.config import ProxyConfig
from pipeline.proxy.publishing.kafka_publisher import KafkaPublisher
from pipeline.topics import create_topics
from sluice.broker_config import BrokerConfig
from sluice.topics_config import TopicsConfig
from tests.kafka_helpers import read_topic


async def _wait(cond: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


def test_memory_stays_bounded_and_replay_keeps_order(tmp_path: Path) -> None:
    port = free_port()
    broker_cfg = BrokerConfig(bootstrap_servers=f"127.0.0.1:{port}", embedded=False)
    topics = TopicsConfig(prefix="pub.", partitions=2)
    topic = topics.name("steps_raw")
    broker = LocalBroker(port)

    async def scenario() -> None:
        settings = ProxyConfig(publish_timeout_ms=1000, spool_max_memory_events=10, probe_interval_s=0.2)
        pub = KafkaPublisher(broker_cfg, tmp_path / "spool", settings)
        await pub.start()
        try:
            for i in range(200):
                pub.publish(topic, f"traj-{i % 3}", f"{i % 3}:{i}".encode())
            await _wait(lambda: pub.stats().spool_depth == 200)
            stats = pub.stats()
            assert stats.mode == "spooling" and stats.memory_events <= 10 and stats.delivered == 0

            broker.start()
            create_topics(broker_cfg, topics)
            await _wait(lambda: pub.stats().delivered == 200)
            pub.publish(topic, "traj-0", b"0:after")  # back to direct publishing
            await _wait(lambda: pub.stats().delivered == 201 and pub.stats().mode == "direct")
        finally:
            await pub.close()

    try:
        asyncio.run(scenario())
        assert not list((tmp_path / "spool").glob("*.seg"))
        records = read_topic(broker_cfg, topic, expect=201, idle_s=0.5)
        assert len(records) == 201
        per_key: dict[bytes, list[str]] = {}
        for key, value in records:
            per_key.setdefault(key, []).append(value.decode().split(":")[1])
        for k in range(3):
            expected = [str(i) for i in range(200) if i % 3 == k] + (["after"] if k == 0 else [])
            assert per_key[f"traj-{k}".encode()] == expected
    finally:
        broker.stop()
