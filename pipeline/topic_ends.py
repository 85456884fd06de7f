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


class TopicEnds:
    """Reads where partitions begin and end, again and again, through one probe consumer of no group
    (``watermarks`` opens and closes one per call; a reader that asks every few milliseconds keeps this).
    Not thread-safe."""

    def __init__(self, broker: BrokerConfig, timeout_s: float = 10.0) -> None:
        self.broker = broker
        self.timeout_s = timeout_s
        self._probe = Consumer(
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

    def watermarks(self, partitions: Iterable[Partition]) -> dict[Partition, tuple[int, int]]:
        """``(low, high)`` offsets of each partition: the first record still held and one past the last
        (``KafkaException`` when the broker does not tell within ``timeout_s``)."""
        parts = list(dict.fromkeys(partitions))
        if not parts:
            return {}
        listed = {
            (t, p): self._probe.get_watermark_offsets(TopicPartition(t, p), timeout=self.timeout_s)
            for t, p in parts
        }
        if self.broker.profile != "tansu":
            return listed
        try:
            return _fetched_ends(self._probe, listed, self.timeout_s)
        finally:
            self._probe.unassign()

    def end_offsets(self, partitions: Iterable[Partition]) -> dict[Partition, int]:
        """One past the last record of each partition (``KafkaException`` when the broker does not tell)."""
        return {tp: high for tp, (_, high) in self.watermarks(partitions).items()}

    def close(self) -> None:
        self._probe.close()

    def __enter__(self) -> TopicEnds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def watermarks(
    broker: BrokerConfig, partitions: Iterable[Partition], timeout_s: float = 10.0
) -> dict[Partition, tuple[int, int]]:
    """``(low, high)`` offsets of each partition, read once (``TopicEnds.watermarks``)."""
    with TopicEnds(broker, timeout_s) as ends:
        return ends.watermarks(partitions)


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
            if tp in out:
                out[tp] = (out[tp][0], max(out[tp][1], msg.offset() + 1))
            continue
        if err.code() == KafkaError._PARTITION_EOF:
            if tp in start and msg.offset() >= start[tp]:  # not a late word on an earlier assignment
                out[tp] = (out[tp][0], max(out[tp][1], msg.offset()))
                pending.discard(tp)
        elif not err.retriable():
            raise KafkaException(err)
    return out
