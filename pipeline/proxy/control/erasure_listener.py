"""Control: read the erasure topic, so every proxy purges its own linking state.

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
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from pipeline.proxy.control.topic_tail import TopicTail
from sluice.broker_config import BrokerConfig
from sluice.events import ErasureEvent

log = logging.getLogger("sluice.proxy.erasure")


class ErasureListener(TopicTail):
    NAME = "proxy-erasures"
    LABEL = "erasure topic"
    log = log

    def __init__(
        self,
        broker: BrokerConfig,
        topic: str,
        start_offsets: dict[int, int],
        apply: Callable[[ErasureEvent, int, int], None],
    ) -> None:
        super().__init__(broker, topic, start_offsets)
        self.apply = apply  # called on the event loop with (event, partition, next offset)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        super().start()

    def on_record(self, msg: Any) -> None:
        try:
            event = ErasureEvent.model_validate_json(msg.value() or b"")
        except ValidationError:
            log.warning("erasure topic: skipped a record that is not an erasure event")
            return
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self.apply, event, msg.partition(), msg.offset() + 1)
