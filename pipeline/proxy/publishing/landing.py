"""Up to which offset the proxy's records have landed: processed into stage state that outlives the broker.

On the embedded broker (memory storage) a record the broker acknowledged is not safe yet: a broker
restart empties every topic. What does survive is the stage workers' tables (RocksDB on local disk,
carried into a new broker by ``pipeline/stages/table_carry.py``). A raw record has landed once the
stages' consumer group processed it *and* everything the redact stage produced from it was processed by
the join stage, into its tables:

1. read the group's committed offsets ``A`` on the raw topics (a commit comes after the redact stage's
   outputs were acknowledged), then the high watermarks ``H`` of the redacted topic: every output of a
   raw record below ``A`` lies below ``H``;
2. once the group's committed offsets on the redacted topic reach ``H``, every raw record below ``A``
   has landed.

Each ``poll`` takes one snapshot (step 1) and releases the oldest snapshots step 2 covers, so a record
lands about one poll interval after the join stage processed its redacted form. ``poll`` also reads the
cluster id: a new id is a new, empty broker (the publisher then sends every unlanded record again).
Blocking (a few small requests): the publisher runs it in an executor thread.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition

from sluice.broker_config import BrokerConfig

Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True)
class LandingReport:
    cluster: str | None
    landed: Offsets = field(default_factory=dict)  # (raw topic, partition) -> every offset below landed


@dataclass(frozen=True)
class _Snapshot:
    raw_committed: Offsets
    redacted_ends: Offsets


class LandingTracker:
    """Follows one stage group over ``raw_topics`` -> ``redacted_topic``."""

    def __init__(
        self,
        broker: BrokerConfig,
        group: str,
        raw_topics: list[str],
        redacted_topic: str,
        timeout_s: float = 2.0,
    ) -> None:
        self.raw_topics = raw_topics
        self.redacted_topic = redacted_topic
        self.timeout_s = timeout_s
        # reads the group's commits (OffsetFetch) without ever joining it: no subscribe, no assign
        self._consumer = Consumer(
            broker.consumer_config(
                group, **{"client.id": "sluice-proxy-landing", "log_level": 2}
            )  # outages are the publisher's to report
        )
        self._snapshots: deque[_Snapshot] = deque(maxlen=10_000)
        self._cluster: str | None = None

    def poll(self) -> LandingReport:
        """One snapshot, and the landing offsets the oldest ones now prove. Raises ``KafkaException``."""
        md = self._consumer.list_topics(timeout=self.timeout_s)
        if md.cluster_id != self._cluster:
            self._snapshots.clear()  # offsets of another cluster prove nothing here
            self._cluster = md.cluster_id
        if any(t not in md.topics for t in [*self.raw_topics, self.redacted_topic]):
            return LandingReport(md.cluster_id)
        raw = [TopicPartition(t, p) for t in self.raw_topics for p in md.topics[t].partitions]
        redacted = [TopicPartition(self.redacted_topic, p) for p in md.topics[self.redacted_topic].partitions]
        raw_committed = self._committed(raw)
        ends: Offsets = {}
        for tp in redacted:
            _, high = self._consumer.get_watermark_offsets(tp, timeout=self.timeout_s, cached=False)
            ends[(tp.topic, tp.partition)] = high
        self._snapshots.append(_Snapshot(raw_committed, ends))
        done = self._committed(redacted)
        landed: Offsets = {}
        while self._snapshots and all(
            done.get(k, 0) >= end for k, end in self._snapshots[0].redacted_ends.items()
        ):
            landed = self._snapshots.popleft().raw_committed
        return LandingReport(md.cluster_id, landed)

    def _committed(self, partitions: list[TopicPartition]) -> Offsets:
        out: Offsets = {}
        for tp in self._consumer.committed(partitions, timeout=self.timeout_s):
            if tp.error is not None:
                raise KafkaException(tp.error)
            out[(tp.topic, tp.partition)] = max(0, tp.offset)  # no commit yet (-1001): nothing landed
        return out

    def close(self) -> None:
        self._consumer.close()
