"""Control: a daemon thread that tails every partition of one topic, with no consumer group.

Each proxy reads all of such a topic itself (erasures, overlay assignments), from offsets it saved or
from the beginning, so no group is joined and nothing is committed. While the broker is down the thread
keeps retrying and the proxy keeps serving; a subclass says what one record does (``on_record``, called
on the thread).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from sluice.broker_config import BrokerConfig


class TopicTail:
    NAME: ClassVar[str]  # the thread's name; the consumer's client id is ``sluice-<NAME>``
    LABEL: ClassVar[str]  # how log lines name the topic
    log: ClassVar[logging.Logger]

    def __init__(self, broker: BrokerConfig, topic: str, start_offsets: dict[int, int] | None = None) -> None:
        self.broker = broker
        self.topic = topic
        self.offsets = dict(start_offsets or {})  # partition -> next offset to read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.NAME, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def on_record(self, msg: Any) -> None:
        """Take one record of the topic (a ``confluent_kafka.Message`` without error)."""
        raise NotImplementedError

    def _assign(self, consumer: Consumer) -> bool:
        meta = consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return False
        consumer.assign(
            [
                TopicPartition(self.topic, p, self.offsets.get(p, OFFSET_BEGINNING))
                for p in sorted(meta.partitions)
            ]
        )
        return True

    def _run(self) -> None:
        conf = self.broker.consumer_config(f"sluice-{self.NAME}", **{"enable.partition.eof": False})
        consumer = Consumer(conf)
        try:
            while not self._stop.is_set():
                try:
                    if self._assign(consumer):
                        break
                except Exception as err:  # broker down: keep serving, try again
                    self.log.debug("%s not reachable yet: %s", self.LABEL, err)
                self._stop.wait(2.0)
            while not self._stop.is_set():
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        self.log.warning("%s: %s", self.LABEL, msg.error())
                    continue
                self.on_record(msg)
        finally:
            consumer.close()
