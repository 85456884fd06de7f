"""Publishing: up to which offset the proxy's records have landed in stage state that outlives the broker.

On the embedded broker (memory storage) a record the broker acknowledged is not safe yet: a broker
restart empties every topic. What does survive is the stage workers' tables (RocksDB on local disk,
carried into a new broker by ``pipeline/stages/table_carry.py``). The stages redact and join a raw record
in one pass into their tables, and their consumer group commits its offset only after that pass (and
after the broker acknowledged what it sent): every raw record below the group's committed offset has
landed.

``poll`` reads those offsets, and the cluster id: a new id is a new, empty broker (the publisher then
sends every unlanded record again). Blocking (a few small requests): the publisher runs it in an
executor thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition

from sluice.broker_config import BrokerConfig

Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True)
class LandingReport:
    cluster: str | None
    landed: Offsets = field(default_factory=dict)  # (raw topic, partition) -> every offset below landed


class LandingTracker:
    """Follows one stage group over ``raw_topics``."""

    def __init__(
        self, broker: BrokerConfig, group: str, raw_topics: list[str], timeout_s: float = 2.0
    ) -> None:
        self.raw_topics = raw_topics
        self.timeout_s = timeout_s
        # reads the group's commits (OffsetFetch) without ever joining it: no subscribe, no assign
        self._consumer = Consumer(
            broker.consumer_config(
                group, **{"client.id": "sluice-proxy-landing", "log_level": 2}
            )  # outages are the publisher's to report
        )

    def poll(self) -> LandingReport:
        """The landing offsets the group's commits prove now. Raises ``KafkaException``."""
        md = self._consumer.list_topics(timeout=self.timeout_s)
        if any(t not in md.topics for t in self.raw_topics):
            return LandingReport(md.cluster_id)
        raw = [TopicPartition(t, p) for t in self.raw_topics for p in md.topics[t].partitions]
        return LandingReport(md.cluster_id, self._committed(raw))

    def _committed(self, partitions: list[TopicPartition]) -> Offsets:
        out: Offsets = {}
        for tp in self._consumer.committed(partitions, timeout=self.timeout_s):
            if tp.error is not None:
                raise KafkaException(tp.error)
            out[(tp.topic, tp.partition)] = max(0, tp.offset)  # no commit yet (-1001): nothing landed
        return out

    def close(self) -> None:
        self._consumer.close()
