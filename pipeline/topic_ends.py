"""Where each partition of a topic begins and ends, right on every broker Sluice runs on.

A topic's end offset (its high watermark) decides when a drain is done, how far a status reports lag,
where a journal or a delivery check stops reading, and when a table's recovery has read its whole
changelog. Kafka answers it with ListOffsets. Tansu's ListOffsets("latest") returns the first offset of
the newest record batch + 1, short of the end whenever that batch holds more than one record; its Fetch
responses carry the right high watermark. On the ``tansu`` profile the end is therefore read from a
fetch: a consumer of no group reads each partition from the newest batch's first record (one offset
below what ListOffsets said) until it reaches the end, and that end offset is the answer. Without this,
producers would have to keep one record per batch, which makes every record its own broker request.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from sluice.broker_config import BrokerConfig

Partition = tuple[str, int]  # (topic, partition number)


def watermarks(
    broker: BrokerConfig, partitions: Iterable[Partition], timeout_s: float = 10.0
) -> dict[Partition, tuple[int, int]]:
    """``(low, high)`` offsets of each partition: the first record still held and one past the last
    (``KafkaException`` when the broker does not tell within ``timeout_s``)."""
    parts = list(dict.fromkeys(partitions))
    if not parts:
        return {}
    probe = Consumer(
        broker.consumer_config(
            f"sluice-ends-{uuid.uuid4().hex[:8]}",
            **{
                "client.id": "sluice-topic-ends",
                "enable.partition.eof": True,
                "fetch.wait.max.ms": 10,
                "auto.offset.reset": "latest",
            },
        )
    )
    try:
        listed = {
            (t, p): probe.get_watermark_offsets(TopicPartition(t, p), timeout=timeout_s) for t, p in parts
        }
        if broker.profile != "tansu":
            return listed
        return _fetched_ends(probe, listed, timeout_s)
    finally:
        probe.close()


def end_offsets(
    broker: BrokerConfig, partitions: Iterable[Partition], timeout_s: float = 10.0
) -> dict[Partition, int]:
    """One past the last record of each partition (``KafkaException`` when the broker does not tell)."""
    return {tp: high for tp, (_, high) in watermarks(broker, partitions, timeout_s).items()}


def _fetched_ends(
    probe: Consumer, listed: dict[Partition, tuple[int, int]], timeout_s: float
) -> dict[Partition, tuple[int, int]]:
    """Correct each listed high watermark by reading its partition from the newest batch to the end."""
    out = dict(listed)
    start = {tp: max(low, high - 1) for tp, (low, high) in listed.items() if high > low}
    if not start:
        return out
    probe.assign([TopicPartition(t, p, offset) for (t, p), offset in start.items()])
    pending = set(start)
    deadline = time.monotonic() + timeout_s
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise KafkaException(
                KafkaError(
                    KafkaError._TIMED_OUT, f"the end of {sorted(pending)} not reached in {timeout_s:.0f}s"
                )
            )
        msg = probe.poll(min(left, 1.0))
        if msg is None:
            continue
        tp = (msg.topic(), msg.partition())
        err = msg.error()
        if err is None:
            out[tp] = (out[tp][0], max(out[tp][1], msg.offset() + 1))
            continue
        if err.code() == KafkaError._PARTITION_EOF:
            out[tp] = (out[tp][0], max(out[tp][1], msg.offset()))
            pending.discard(tp)
        elif not err.retriable():
            raise KafkaException(err)
    return out
