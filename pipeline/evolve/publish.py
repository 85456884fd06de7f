"""Publish the control plane's records: ledger entries and overlay assignments, each acked by the broker.

The rule the control plane keeps: nothing changes without a ledger entry. ``record`` publishes a
``LedgerEntry`` (key: its proposal id) and returns once the broker acked it; ``assign`` publishes an
``OverlayAssignment`` on the compacted overlays topic (key: its scope) the same way, and is called only
after the entry that names it was recorded. ``read_assignments`` reads the overlays topic from the
beginning and keeps the latest assignment per scope.

    EvolutionPublisher(cfg.broker, cfg.topics).record(LedgerEntry(...))
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from sluice.config import BrokerConfig, TopicsConfig
from sluice.evolution import LedgerEntry, OverlayAssignment


class PublishError(RuntimeError):
    """The broker did not ack a control-plane record."""


class EvolutionPublisher:
    def __init__(self, broker: BrokerConfig, topics: TopicsConfig, timeout_s: float = 30.0) -> None:
        self.broker, self.topics, self.timeout_s = broker, topics, timeout_s
        self._producer: Producer | None = None

    def _produce(self, logical: str, key: str, value: bytes) -> None:
        if self._producer is None:
            self._producer = Producer(
                self.broker.producer_config(**{"message.timeout.ms": int(self.timeout_s * 1000)})
            )
        errors: list[KafkaError] = []

        def done(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(err)

        topic = self.topics.name(logical)
        self._producer.produce(topic, key=key.encode(), value=value, on_delivery=done)
        if self._producer.flush(self.timeout_s) != 0:
            raise PublishError(f"{topic}: no ack within {self.timeout_s}s")
        if errors:
            raise PublishError(f"{topic}: {errors[0]}")

    def record(self, entry: LedgerEntry) -> None:
        """Publish a ledger entry and wait for the broker's ack."""
        self._produce("ledger", entry.proposal_id, entry.model_dump_json().encode())

    def assign(self, assignment: OverlayAssignment) -> None:
        """Publish an overlay assignment and wait for the broker's ack."""
        self._produce("overlays", assignment.key, assignment.model_dump_json().encode())

    def read_assignments(self) -> dict[str, OverlayAssignment]:
        """The latest assignment per scope key, read from the beginning of the overlays topic."""
        topic = self.topics.name("overlays")
        consumer = Consumer(self.broker.consumer_config(f"sluice-evolve-read-{uuid.uuid4().hex[:8]}"))
        out: dict[str, OverlayAssignment] = {}
        try:
            meta = consumer.list_topics(topic, timeout=self.timeout_s).topics.get(topic)
            if meta is None or meta.error is not None:
                return out
            ends: dict[int, int] = {}
            for p in meta.partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=self.timeout_s)
                if high > low:
                    ends[p] = high
            if not ends:
                return out
            consumer.assign([TopicPartition(topic, p, 0) for p in ends])
            done: set[int] = set()
            while len(done) < len(ends):
                msg = consumer.poll(self.timeout_s)
                if msg is None:
                    raise PublishError(f"{topic}: no records within {self.timeout_s}s")
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        done.add(msg.partition())
                        continue
                    raise KafkaException(msg.error())
                if msg.offset() + 1 >= ends[msg.partition()]:
                    done.add(msg.partition())
                if msg.value() is None:
                    out.pop((msg.key() or b"").decode(), None)
                    continue
                assignment = OverlayAssignment.model_validate_json(msg.value())
                out[assignment.key] = assignment
        finally:
            consumer.close()
        return out

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(self.timeout_s)
            self._producer = None
