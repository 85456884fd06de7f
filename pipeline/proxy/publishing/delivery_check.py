"""Publishing: which records of the log's unacknowledged tail the broker already holds (after a crash).

A proxy killed between the broker's acknowledgement of a record and the write of that acknowledgement
to the log's cursor would send the record a second time at its next start. Before replaying a tail
left by a crash, the publisher reads each partition of the tail's topics from just after the last
offset the cursor knows was ours (or the last ``window`` records when it knows none) up to the high
watermark, and drops the tail records found there (same topic, key and value bytes). Blocking: the
publisher runs it in an executor thread, once, when the broker is reachable.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from pipeline.topic_ends import watermarks
from sluice.broker_config import BrokerConfig

log = logging.getLogger(__name__)


def record_digest(topic: str, key: bytes | None, value: bytes | None) -> bytes:
    """Identity of a record's content: what the tail is matched on."""
    h = hashlib.blake2b(digest_size=16)
    for part in (topic.encode(), key or b"", value or b""):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.digest()


def already_delivered(
    broker: BrokerConfig,
    tail: Iterable[tuple[int, str, bytes]],
    positions: dict[str, int],
    window: int = 100_000,
    timeout_s: float = 10.0,
) -> dict[int, tuple[str, int, int]]:
    """seq -> (topic, partition, offset) of every tail record (seq, topic, ``record_digest``) already on
    the broker."""
    wanted: dict[bytes, list[int]] = {}
    topics: set[str] = set()
    for seq, topic, digest in tail:
        wanted.setdefault(digest, []).append(seq)
        topics.add(topic)
    if not wanted:
        return {}
    consumer = Consumer(
        broker.consumer_config(
            f"sluice-proxy-check-{uuid.uuid4().hex[:8]}",
            **{"enable.partition.eof": True, "client.id": "sluice-proxy-delivery-check"},
        )
    )
    found: dict[int, tuple[str, int, int]] = {}
    try:
        assignment: list[TopicPartition] = []
        ends: dict[tuple[str, int], int] = {}
        md = consumer.list_topics(timeout=timeout_s)
        parts = [(t, p) for t in sorted(topics) if t in md.topics for p in md.topics[t].partitions]
        for (topic, p), (low, high) in watermarks(broker, parts, timeout_s).items():
            start = max(low, positions.get(f"{topic}|{p}", high - window - 1) + 1)
            if start < high:
                assignment.append(TopicPartition(topic, p, start))
                ends[(topic, p)] = high
        if not assignment:
            return {}
        consumer.assign(assignment)
        open_parts = set(ends)
        deadline = time.monotonic() + timeout_s
        while open_parts:
            if time.monotonic() > deadline:
                raise KafkaException(f"reading back {sorted(open_parts)} timed out")
            for msg in consumer.consume(500, timeout=0.1):
                tp = (msg.topic(), msg.partition())
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        open_parts.discard(tp)
                        continue
                    raise KafkaException(msg.error())
                seqs = wanted.get(record_digest(msg.topic(), msg.key(), msg.value()))
                if seqs:
                    found[seqs.pop(0)] = (msg.topic(), msg.partition(), msg.offset())
                if msg.offset() + 1 >= ends.get(tp, 0):
                    open_parts.discard(tp)
        if found:
            log.info(
                "%d records of the write-ahead log's tail were already delivered: not sent again", len(found)
            )
        return found
    finally:
        consumer.close()
