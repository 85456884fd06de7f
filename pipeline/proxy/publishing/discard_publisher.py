"""Publishing: a publisher that counts and drops events (``proxy.publish: false``)."""

from __future__ import annotations

from pipeline.proxy.publishing.base import PublisherStats


class DiscardPublisher:
    def __init__(self) -> None:
        self._count = 0

    async def start(self) -> None:
        return None

    def publish(self, topic: str, key: str, value: bytes) -> None:
        self._count += 1

    def durable(self) -> None:
        return None

    async def close(self, timeout_s: float | None = None) -> None:
        return None

    def stats(self) -> PublisherStats:
        return PublisherStats("discard", 0, 0, 0, self._count, 0)
