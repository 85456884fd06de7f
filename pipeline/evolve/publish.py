"""Publish the control plane's changes: ledger entries first, then the overlay assignments they name.

Nothing changes without a ledger entry: ``record`` puts a ``LedgerEntry`` on the ledger topic (key =
proposal id) and returns only once the broker acknowledged it; ``assign`` then puts the
``OverlayAssignment`` on the compacted overlays topic (key = its scope, ``tenant/task``), where every
proxy picks it up. Both raise ``PublishError`` when the broker does not acknowledge in time, so a caller
never goes on as if a change it could not record had happened. ``read_assignments`` reads the overlays
topic from the beginning: the latest assignment per scope, what a proxy starting now would apply.

    publisher = EvolutionPublisher(cfg.broker, cfg.topics)
    publisher.record(entry)
    publisher.assign(assignment.model_copy(update={"ledger_entry_id": entry.entry_id}))
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from pydantic import BaseModel, ValidationError

from pipeline.evolve.exceptions import PublishError
from pipeline.topic_ends import watermarks
from sluice.broker_config import BrokerConfig
from sluice.evolution import LedgerEntry, OverlayAssignment
from sluice.topics_config import TopicsConfig

DEFAULT_ACK_TIMEOUT_S = 30.0


class EvolutionPublisher:
    """Produces to the ledger and overlays topics and waits for each acknowledgement."""

    def __init__(
        self, broker: BrokerConfig, topics: TopicsConfig, timeout_s: float = DEFAULT_ACK_TIMEOUT_S
    ) -> None:
        self.broker, self.topics = broker, topics
        self.ledger_topic = topics.name("ledger")
        self.overlays_topic = topics.name("overlays")
        self.timeout_s = timeout_s
        self._producer: Producer | None = None

    def _produce(self, topic: str, key: str, event: BaseModel, what: str) -> None:
        if self._producer is None:
            timeout_ms = int(self.timeout_s * 1000)
            self._producer = Producer(
                self.broker.producer_config(**{"message.timeout.ms": timeout_ms, "linger.ms": 0})
            )
        outcome: list[KafkaError | None] = []
        try:
            self._producer.produce(
                topic,
                key=key.encode(),
                value=event.model_dump_json().encode(),
                on_delivery=lambda err, _msg: outcome.append(err),
            )
        except (KafkaException, BufferError) as err:
            raise PublishError(f"{what} could not be queued for {topic}: {err}") from None
        deadline = time.monotonic() + self.timeout_s
        while not outcome and time.monotonic() < deadline:
            self._producer.poll(min(0.1, max(0.0, deadline - time.monotonic())))
        if not outcome:
            raise PublishError(
                f"{what} was not acknowledged by {self.broker.bootstrap_servers} within "
                f"{self.timeout_s:g}s: the change is not recorded"
            )
        if outcome[0] is not None:
            raise PublishError(f"{what} was refused by the broker ({topic}): {outcome[0].str()}")

    def record(self, entry: LedgerEntry) -> None:
        """Put one ledger entry on the ledger topic; returns once the broker acknowledged it."""
        self._produce(self.ledger_topic, entry.proposal_id, entry, f"ledger entry {entry.entry_id}")

    def assign(self, assignment: OverlayAssignment) -> None:
        """Put one overlay assignment on the overlays topic; returns once the broker acknowledged it."""
        self._produce(self.overlays_topic, assignment.key, assignment, f"overlay assignment {assignment.key}")

    def read_assignments(self, timeout_s: float = 10.0) -> dict[str, OverlayAssignment]:
        """The latest assignment per scope key, read from the beginning of the overlays topic to its end."""
        consumer = Consumer(
            self.broker.consumer_config(
                f"sluice-evolve-read-{uuid.uuid4().hex[:8]}", **{"enable.partition.eof": True}
            )
        )
        try:
            return _read_latest(self.broker, consumer, self.overlays_topic, timeout_s)
        finally:
            consumer.close()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(self.timeout_s)
            self._producer = None

    def __enter__(self) -> EvolutionPublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_latest(
    broker: BrokerConfig, consumer: Consumer, topic: str, timeout_s: float
) -> dict[str, OverlayAssignment]:
    deadline = time.monotonic() + timeout_s
    try:
        meta = consumer.list_topics(topic, timeout=max(0.5, timeout_s)).topics.get(topic)
    except KafkaException as err:
        raise PublishError(f"overlays topic {topic} not readable: {err}") from None
    if meta is None or meta.error is not None or not meta.partitions:
        raise PublishError(f"overlays topic {topic} does not exist (sluice topics create)")
    parts = sorted(meta.partitions)
    try:
        marks = watermarks(broker, [(topic, p) for p in parts], timeout_s=max(0.5, timeout_s))
    except KafkaException as err:
        raise PublishError(f"overlays topic {topic}: {err}") from None
    ends = {p: high for (_, p), (low, high) in marks.items() if high > low}
    latest: dict[str, OverlayAssignment] = {}
    if not ends:
        return latest
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
    pending = dict(ends)
    while pending:
        if time.monotonic() > deadline:
            raise PublishError(f"overlays topic {topic} not read to its end within {timeout_s:g}s")
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                pending.pop(msg.partition(), None)
                continue
            raise PublishError(f"overlays topic {topic}: {msg.error()}")
        if msg.offset() + 1 >= pending.get(msg.partition(), 0):
            pending.pop(msg.partition(), None)
        key = msg.key().decode("utf-8", "replace") if msg.key() is not None else None
        value = msg.value()
        if value is None:
            if key is not None:
                latest.pop(key, None)
            continue
        try:
            assignment = OverlayAssignment.model_validate_json(value)
        except ValidationError:
            continue  # not an assignment: a proxy skips it too
        if key is None or key == assignment.key:
            latest[assignment.key] = assignment
    return latest
