"""Read a whole topic from the beginning up to its end as it is now (no consumer group is committed).

The control plane's state is on two topics: the compacted overlays topic (the latest assignment per
scope) and the ledger (every entry ever made). Both are read whole by a pass of the loop, so a pass
never depends on how far the sink has got with the ledger.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from pipeline.topic_ends import end_offsets
from sluice.broker_config import BrokerConfig


def read_all(broker: BrokerConfig, topic: str, timeout_s: float = 30.0) -> list[tuple[bytes | None, bytes]]:
    """Every (key, value) on the topic now, in partition order (tombstones skipped)."""
    consumer = Consumer(
        broker.consumer_config(f"sluice-evolve-read-{uuid.uuid4().hex[:8]}", **{"enable.partition.eof": True})
    )
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s)
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            raise RuntimeError(f"topic {topic} is not there: {info.error if info else 'missing'}")
        parts = sorted(info.partitions)
        ends = {p: end for (_, p), end in end_offsets(broker, [(topic, p) for p in parts], timeout_s).items()}
        todo = {p for p in parts if ends[p] > 0}
        if not todo:
            return []
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(todo)])
        out: list[tuple[bytes | None, bytes]] = []
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    todo.discard(msg.partition())
                    continue
                raise RuntimeError(f"reading {topic}: {msg.error()}")
            if msg.value() is not None:
                out.append((msg.key(), msg.value()))
            if msg.offset() + 1 >= ends[msg.partition()]:
                todo.discard(msg.partition())
        if todo:
            raise TimeoutError(
                f"reading {topic}: partitions {sorted(todo)} not read to their end in {timeout_s}s"
            )
        return out
    finally:
        consumer.close()
