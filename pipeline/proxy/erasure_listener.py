"""How a proxy learns of erasures: it reads the erasure topic, so every proxy purges its own linking state.

A daemon thread consumes ``topics.name('erasure')`` (every partition, no consumer group: each proxy reads
all of it) from the offsets saved with the link state, or from the beginning on first start. Each
``ErasureEvent`` is handed to the event loop, which drops the covered trajectories from the linker
(``HistoryLinker.forget``), remembers the erased ids (so a later step, reward or end naming one gets a
410) and rewrites ``links.json`` at once. A proxy that was stopped during an erasure catches up when it
starts; while the broker is down it keeps retrying and serving.

Chosen over an admin call from ``sluice erase``: it reaches every proxy, including ones started later or
down at the time, and needs no second credential path.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from pydantic import ValidationError

from sluice.config import BrokerConfig
from sluice.events import ErasureEvent

log = logging.getLogger("sluice.proxy.erasure")


class ErasureListener:
    def __init__(
        self,
        broker: BrokerConfig,
        topic: str,
        start_offsets: dict[int, int],
        apply: Callable[[ErasureEvent, int, int], None],
    ) -> None:
        self.broker = broker
        self.topic = topic
        self.offsets = dict(start_offsets)
        self.apply = apply  # called on the event loop with (event, partition, next offset)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="proxy-erasures", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

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
        conf = self.broker.consumer_config("sluice-proxy-erasures", **{"enable.partition.eof": False})
        consumer = Consumer(conf)
        try:
            while not self._stop.is_set():
                try:
                    if self._assign(consumer):
                        break
                except Exception as err:  # broker down: keep serving, try again
                    log.debug("erasure topic not reachable yet: %s", err)
                self._stop.wait(2.0)
            while not self._stop.is_set():
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        log.warning("erasure topic: %s", msg.error())
                    continue
                try:
                    event = ErasureEvent.model_validate_json(msg.value() or b"")
                except ValidationError:
                    log.warning("erasure topic: skipped a record that is not an erasure event")
                    continue
                assert self._loop is not None
                self._loop.call_soon_threadsafe(self.apply, event, msg.partition(), msg.offset() + 1)
        finally:
            consumer.close()
