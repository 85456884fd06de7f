"""Faust's aiokafka transport with a short fetch wait, for the local Tansu broker (``broker.profile: tansu``).

Faust hard-codes ``fetch_max_wait_ms=1500`` for its consumers. Real Kafka answers a fetch as soon as data
arrives, so the wait costs nothing there; Tansu answers a waiting fetch only on its own wake-ups (measured:
~380 ms after the record, vs 2–25 ms with a 50 ms wait), which adds that much latency to every stage hop.
This transport is the stock one with the wait taken from ``BrokerConfig.fetch_max_wait_ms``. It is
registered under the URL scheme ``sluice-tansu`` through the ``faust.transports`` entry point, and
``BrokerConfig.faust_settings()`` selects it for the tansu profile.
"""

from __future__ import annotations

from typing import Any, ClassVar

from faust.transport.drivers import aiokafka as stock


class ShortFetchConsumerThread(stock.AIOKafkaConsumerThread):
    fetch_max_wait_ms: ClassVar[int] = 50

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        consumer._fetch_max_wait_ms = self.fetch_max_wait_ms  # read when the consumer starts its fetcher
        return consumer


class ShortFetchConsumer(stock.Consumer):
    def _new_consumer_thread(self) -> ShortFetchConsumerThread:
        return ShortFetchConsumerThread(self, loop=self.loop, beacon=self.beacon)


class Transport(stock.Transport):
    Consumer = ShortFetchConsumer
    driver_version = stock.Transport.driver_version


def set_fetch_max_wait_ms(ms: int) -> None:
    """Apply the broker profile's fetch wait to every consumer this transport creates."""
    ShortFetchConsumerThread.fetch_max_wait_ms = ms
