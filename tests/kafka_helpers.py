"""Read topics back in tests."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError, TopicPartition

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
    broker: BrokerConfig, topic: str, timeout_s: float = 30.0, linger_s: float = 0.0
) -> list[tuple[bytes | None, bytes]]:
    """Every record ``topic`` holds now: its partitions are assigned (no group to join) from their low
    watermarks and read until each one's position reaches the high watermark read at the start; then
    ``linger_s`` more, for any record written meanwhile. Fails when the high watermarks are not reached
    within ``timeout_s``. Returns (key, value) pairs in arrival order."""
    consumer = Consumer(broker.consumer_config(f"test-{uuid.uuid4().hex[:8]}"))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        if meta.error is not None:
            raise RuntimeError(meta.error)
        marks = watermarks(broker, [(topic, p) for p in meta.partitions])
        consumer.assign([TopicPartition(topic, p, low) for (_, p), (low, _) in marks.items()])
        ends = {p: high for (_, p), (low, high) in marks.items() if high > low}
        out: list[tuple[bytes | None, bytes]] = []
        deadline = time.monotonic() + timeout_s
        while ends:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: not read up to its high watermarks {ends} in {timeout_s}s")
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                out.append((msg.key(), msg.value()))
            elif msg is not None and msg.error().code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(msg.error())
            at = consumer.position([TopicPartition(topic, p) for p in ends])
            ends = {tp.partition: ends[tp.partition] for tp in at if tp.offset < ends[tp.partition]}
        linger_end = time.monotonic() + linger_s
        while time.monotonic() < linger_end:
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                out.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return out
