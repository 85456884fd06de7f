"""Producing a benchmark's records to the broker before it is timed: every record sent, none lost to a full
producer queue (``BufferError`` waits for deliveries and tries again)."""

from __future__ import annotations

from confluent_kafka import Producer


def produce_waiting(
    producer: Producer, topic: str, key: bytes | str, value: bytes, partition: int | None = None
) -> None:
    """Send one record, serving deliveries while the producer's queue is full."""
    kwargs = {} if partition is None else {"partition": partition}
    while True:
        try:
            producer.produce(topic, key=key, value=value, **kwargs)
            break
        except BufferError:
            producer.poll(0.01)
    producer.poll(0)
