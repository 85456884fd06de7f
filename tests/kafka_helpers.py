"""Read topics back in tests."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError

from pipeline.topic_ends import watermarks
from sluice.broker_config import BrokerConfig


def read_topic(
    broker: BrokerConfig, topic: str, expect: int, timeout_s: float = 30.0, idle_s: float = 1.0
) -> list[tuple[bytes | None, bytes]]:
    """Consume ``topic`` from the beginning until ``expect`` records arrived (then ``idle_s`` more of quiet)
    or ``timeout_s`` passed. Returns (key, value) pairs in partition order."""
    consumer = Consumer(broker.consumer_config(f"test-{uuid.uuid4().hex[:8]}"))
    consumer.subscribe([topic])
    out: list[tuple[bytes | None, bytes]] = []
    deadline = time.monotonic() + timeout_s
    quiet_since: float | None = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if len(out) >= expect:
                    quiet_since = quiet_since or time.monotonic()
                    if time.monotonic() - quiet_since >= idle_s:
                        break
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(msg.error())
            quiet_since = None
            out.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def read_whole_topic(
    broker: BrokerConfig, topic: str, timeout_s: float = 30.0, idle_s: float = 1.0
) -> list[tuple[bytes | None, bytes]]:
    """Every record ``topic`` holds now: consume until the records between each partition's low and high
    watermark arrived (then ``idle_s`` more of quiet, for any written meanwhile) or ``timeout_s`` passed.
    An empty topic is read for ``idle_s`` only, not until the timeout."""
    probe = Consumer(broker.consumer_config(f"test-{uuid.uuid4().hex[:8]}"))
    try:
        meta = probe.list_topics(topic, timeout=10).topics[topic]
        if meta.error is not None:
            raise RuntimeError(meta.error)
        partitions = [(topic, p) for p in meta.partitions]
    finally:
        probe.close()
    held = sum(high - low for low, high in watermarks(broker, partitions).values())
    return read_topic(broker, topic, held, timeout_s, idle_s)
