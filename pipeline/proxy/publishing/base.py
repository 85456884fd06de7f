"""Publishing: the publisher plug point, where the proxy hands encoded events."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class PublisherStats:
    mode: str  # direct | draining | spooling | discard
    in_flight: int  # handed to the producer, not yet acknowledged
    memory_events: int  # held in RAM (waiting + in flight)
    spool_depth: int  # events in the write-ahead log the broker has not acknowledged yet
    delivered: int
    failed_attempts: int  # delivery attempts that failed (the event went to / stayed in the spool)
    log_waits: tuple[int, ...] = ()  # responses per wait for the log (``commit_waits`` buckets)


class EventPublisher(Protocol):
    """Takes encoded events without blocking; delivers them in order per key, eventually.

    Lives on the proxy's event loop: ``start``/``close`` are awaited there, ``publish`` is called there.
    """

    async def start(self) -> None: ...

    def publish(self, topic: str, key: str, value: bytes) -> None:
        """Non-blocking: safe to call on the request path."""
        ...

    def durable(self) -> Awaitable[None] | None:
        """Done once everything published so far survives a crash of this process (the proxy awaits it
        before it completes a response); None when nothing published is waiting to become durable."""
        ...

    async def close(self, timeout_s: float | None = None) -> None:
        """Deliver or persist everything accepted so far, then stop."""
        ...

    def stats(self) -> PublisherStats: ...
