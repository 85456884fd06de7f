"""A local journal of the embedded broker's control topics, replayed into every new broker.

The control plane's state lives on topics that are read from the beginning: the evolution ledger (every
proposal, gate and decision), the overlay assignments a proxy applies, the policy events of the model
server, and the erasure requests the stages and proxies act on. The embedded broker keeps topics in
memory, so without a copy a restart of the broker, or of `sluice up`, would forget every canary and
every active overlay. While `sluice up` runs, a thread of its own tails these topics (every partition,
no consumer group) and appends each record to ``up.journal_dir/<topic>.log``; before any consumer of a
new broker starts, ``restore`` produces the journal into it, partition by partition, in order.

Erasure requests are the exception to "replay everything": the stages act on a tenant- or subject-wide
erasure by purging whatever matches *at that moment*, so replaying an old one would purge what arrived
since. The thread reads the stages' committed offsets on the erasure topic every poll and saves them
(``erasure.done.json``, with the cluster id); ``restore`` produces only the erasure records the stages
had not processed. The stages' erasure rules themselves travel with their tables (``table_carry``).

A record produced in the last moment before the broker dies, before the thread read it, is not in the
journal: the producers of these topics (the control plane, `sluice erase`) wait for the broker's
acknowledgement, and the thread reads within ``POLL_S`` of it. A real Kafka cluster needs no journal.

Frame: partition (u32), offset (i64), key length (i32, -1 for none), key, value length (i32, -1), value.
After a restore the thread reads the new broker from the beginning into ``<topic>.log.new`` and renames it
over ``<topic>.log`` once it reached the end it saw at its start: the old journal stays until then.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from pipeline.topic_ends import end_offsets
from sluice.broker_config import BrokerConfig
from sluice.topics_config import TopicsConfig

log = logging.getLogger(__name__)

JOURNALED = ("ledger", "overlays", "policy_events", "erasure")
POLL_S = 0.2
_HEAD = struct.Struct(">Iq")
_LEN = struct.Struct(">i")

Record = tuple[int, int, bytes | None, bytes | None]  # partition, offset, key, value


def _frame(rec: Record) -> bytes:
    partition, offset, key, value = rec
    parts = [_HEAD.pack(partition, offset)]
    for blob in (key, value):
        parts.append(_LEN.pack(-1 if blob is None else len(blob)))
        parts.append(blob or b"")
    return b"".join(parts)


def read_journal(path: Path) -> Iterator[Record]:
    """The records of one journal file, in order; a torn last frame is ignored."""
    if not path.exists():
        return
    data = path.read_bytes()
    pos = 0
    while pos + _HEAD.size <= len(data):
        partition, offset = _HEAD.unpack_from(data, pos)
        pos += _HEAD.size
        blobs: list[bytes | None] = []
        for _ in range(2):
            if pos + _LEN.size > len(data):
                return
            (n,) = _LEN.unpack_from(data, pos)
            pos += _LEN.size
            if n > 0 and pos + n > len(data):
                return
            blobs.append(None if n < 0 else data[pos : pos + n])
            pos += max(n, 0)
        yield partition, offset, blobs[0], blobs[1]


class ControlJournal:
    """Tails the control topics into local files (``start``/``stop``) and replays them (``restore``)."""

    def __init__(
        self, broker: BrokerConfig, topics: TopicsConfig, journal_dir: Path, stages_group: str
    ) -> None:
        """``journal_dir``: where the files go (resolved); ``stages_group``: the stage workers' consumer
        group, whose committed erasure offsets are kept with the journal."""
        self.broker, self.dir, self.stages_group = broker, journal_dir, stages_group
        self.topics = {logical: topics.name(logical) for logical in JOURNALED}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def path(self, logical: str) -> Path:
        return self.dir / f"{logical}.log"

    # ------------------------------------------------------------------ restore

    def restore(self, timeout_s: float = 60.0) -> dict[str, int]:
        """Produce every journaled record into the (new, empty) broker; returns records per topic."""
        done = self._erasure_done()
        producer = Producer(self.broker.producer_config(**{"client.id": "sluice-journal-restore"}))
        failures: list[str] = []
        counts = dict.fromkeys(JOURNALED, 0)
        for logical, topic in self.topics.items():
            for partition, offset, key, value in read_journal(self.path(logical)):
                if logical == "erasure" and offset < done.get(partition, 0):
                    continue  # the stages processed it: its rule travels with their tables
                while True:
                    try:
                        producer.produce(
                            topic,
                            key=key,
                            value=value,
                            partition=partition,
                            on_delivery=lambda err, _m: err and failures.append(str(err)),
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
                counts[logical] += 1
        left = producer.flush(timeout_s)
        if left or failures:
            raise KafkaException(f"restoring the control journal failed: {left} unsent, {failures[:3]}")
        return counts

    def _erasure_done(self) -> dict[int, int]:
        """The stages' committed offsets on the erasure topic, as last seen on the journaled cluster."""
        try:
            data = json.loads((self.dir / "erasure.done.json").read_text())
            cluster = (self.dir / "cluster").read_text().strip()
        except (OSError, ValueError):
            return {}
        if data.get("cluster") != cluster:
            return {}
        return {int(p): int(o) for p, o in data.get("offsets", {}).items()}

    # ------------------------------------------------------------------ the tailing thread

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="sluice-control-journal", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run(self) -> None:
        broker = self.broker
        # log_level 2: a broker that went away is expected here (its restart stops the thread); no
        # connection-refused lines on the terminal of `sluice up`
        quiet = {"log_level": 2}
        tail = Consumer(
            broker.consumer_config("sluice-control-journal", **{"enable.partition.eof": False, **quiet})
        )
        stages = Consumer(
            broker.consumer_config(self.stages_group, **{"client.id": "sluice-journal-erasure", **quiet})
        )
        self.dir.mkdir(parents=True, exist_ok=True)
        files: dict[str, object] = {}
        try:
            md = tail.list_topics(timeout=10)
            (self.dir / "cluster.new").write_text(md.cluster_id or "")
            assignment: list[TopicPartition] = []
            ends: dict[tuple[str, int], int] = {}  # partitions not read up to their end at the start yet
            for topic in self.topics.values():
                for p in md.topics[topic].partitions:
                    assignment.append(TopicPartition(topic, p, OFFSET_BEGINNING))
            for tp, end in end_offsets(broker, [(a.topic, a.partition) for a in assignment]).items():
                if end > 0:
                    ends[tp] = end
            by_name = {topic: logical for logical, topic in self.topics.items()}
            for logical in JOURNALED:
                files[logical] = open(self.path(logical).with_suffix(".log.new"), "wb")  # noqa: SIM115
            tail.assign(assignment)
            caught_up = False
            while not self._stop.is_set():
                msgs = [m for m in tail.consume(500, POLL_S) if m.error() is None]
                for msg in msgs:
                    files[by_name[msg.topic()]].write(
                        _frame((msg.partition(), msg.offset(), msg.key(), msg.value()))
                    )
                    key = (msg.topic(), msg.partition())
                    if key in ends and msg.offset() + 1 >= ends[key]:
                        del ends[key]
                for f in files.values() if msgs else ():
                    f.flush()
                    os.fsync(f.fileno())
                if not caught_up and not ends:
                    caught_up = True
                    for logical in JOURNALED:
                        os.replace(self.path(logical).with_suffix(".log.new"), self.path(logical))
                    os.replace(self.dir / "cluster.new", self.dir / "cluster")
                if caught_up:
                    try:
                        partitions = md.topics[self.topics["erasure"]].partitions
                        self._save_erasure_done(stages, md.cluster_id, partitions)
                    except KafkaException as err:  # slow or away for a moment: the last saved offsets stand
                        log.debug("control journal: the stages' erasure offsets were not read: %s", err)
        except Exception as err:  # noqa: BLE001 - no broker at the start: the journal keeps what it has
            log.warning("control journal stopped: %s", err)
        finally:
            for f in files.values():
                with contextlib.suppress(OSError):
                    f.close()
            tail.close()
            stages.close()

    def _save_erasure_done(self, stages: Consumer, cluster: str | None, partitions: object) -> None:
        topic = self.topics["erasure"]
        committed = stages.committed([TopicPartition(topic, p) for p in partitions], timeout=5)
        offsets = {tp.partition: max(0, tp.offset) for tp in committed if tp.error is None}
        tmp = self.dir / "erasure.done.json.tmp"
        tmp.write_text(json.dumps({"cluster": cluster, "offsets": offsets}))
        os.replace(tmp, self.dir / "erasure.done.json")
