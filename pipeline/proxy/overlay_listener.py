"""How a proxy learns which overlays to apply: it reads the overlays topic into a map of assignments.

A daemon thread consumes ``topics.name('overlays')`` (every partition, from the beginning, no consumer
group: every proxy reads all of it, and the compacted topic holds the latest assignment per scope) and
keeps the latest ``OverlayAssignment`` per key (``tenant/task``); a tombstone removes the scope. The
request path reads the map without a lock: the thread swaps in a new dict per change, so a reader sees
one whole map or the next. While the broker is down the proxy keeps serving with the map it has (empty
before the first read) and the thread keeps retrying.

A record that is not an assignment, or whose key is not its scope, is skipped with a warning: the proxy
applies nothing it cannot attribute.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from pydantic import ValidationError

from sluice.config import BrokerConfig
from sluice.evolution import OverlayAssignment

log = logging.getLogger("sluice.proxy.overlays")


class OverlayListener:
    def __init__(self, broker: BrokerConfig, topic: str) -> None:
        self.broker = broker
        self.topic = topic
        self._assignments: dict[str, OverlayAssignment] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.records_read = 0

    @property
    def assignments(self) -> Mapping[str, OverlayAssignment]:
        """The latest assignment per scope key (a snapshot: never changed after it is handed out)."""
        return self._assignments

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="proxy-overlays", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def apply(self, key: str | None, value: bytes | None) -> None:
        """Take one record of the topic into the map (called on the listener's thread)."""
        self.records_read += 1
        if value is None:
            if key is not None and key in self._assignments:
                rest = dict(self._assignments)
                rest.pop(key)
                self._assignments = rest
                log.info("overlay assignment %s removed", key)
            return
        try:
            assignment = OverlayAssignment.model_validate_json(value)
        except ValidationError:
            log.warning("overlays topic: skipped a record that is not an overlay assignment")
            return
        if key is not None and key != assignment.key:
            log.warning("overlays topic: skipped an assignment keyed %r for scope %r", key, assignment.key)
            return
        self._assignments = {**self._assignments, assignment.key: assignment}
        log.info(
            "overlay assignment %s: control %s, candidate %s at %.0f%%",
            assignment.key,
            assignment.active.overlay_id if assignment.active else "bare agent",
            assignment.candidate.overlay_id if assignment.candidate else "none",
            assignment.canary_share * 100,
        )

    def _assign(self, consumer: Consumer) -> bool:
        meta = consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return False
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in sorted(meta.partitions)])
        return True

    def _run(self) -> None:
        conf = self.broker.consumer_config("sluice-proxy-overlays", **{"enable.partition.eof": False})
        consumer = Consumer(conf)
        try:
            while not self._stop.is_set():
                try:
                    if self._assign(consumer):
                        break
                except Exception as err:  # broker down: keep serving, try again
                    log.debug("overlays topic not reachable yet: %s", err)
                self._stop.wait(2.0)
            while not self._stop.is_set():
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        log.warning("overlays topic: %s", msg.error())
                    continue
                key = msg.key()
                self.apply(key.decode("utf-8", "replace") if key is not None else None, msg.value())
        finally:
            consumer.close()
