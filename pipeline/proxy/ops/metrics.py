"""Ops: the Prometheus metrics of one proxy app (own registry, so several apps fit in one process).

Exposed at ``GET /metrics``: requests by route and status, request latency, time to first token, upstream
errors, publish lag, events in flight / in memory / in the spool, delivery failures.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from pipeline.proxy.publishing.base import PublisherStats

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


def _seconds(name: str, doc: str, labels: list[str], registry: CollectorRegistry) -> Histogram:
    """A histogram of durations in seconds, on the latency buckets."""
    return Histogram(name, doc, labels, buckets=_LATENCY_BUCKETS, registry=registry)


# The publisher's state, read when scraped: (name, help, reading).
_PUBLISHER_GAUGES: tuple[tuple[str, str, Callable[[PublisherStats], float]], ...] = (
    ("sluice_proxy_publish_in_flight", "Events sent, not yet acknowledged.", lambda s: s.in_flight),
    ("sluice_proxy_publish_memory_events", "Events held in memory.", lambda s: s.memory_events),
    (
        "sluice_proxy_spool_depth",
        "Events in the write-ahead log the broker has not acknowledged.",
        lambda s: s.spool_depth,
    ),
    ("sluice_proxy_events_delivered", "Events the broker acknowledged.", lambda s: s.delivered),
    ("sluice_proxy_delivery_failures", "Delivery attempts that failed.", lambda s: s.failed_attempts),
    (
        "sluice_proxy_spooling",
        "1 while events wait in the write-ahead log instead of going to the broker.",
        lambda s: 0 if s.mode in ("direct", "discard") else 1,
    ),
)


class ProxyMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._requests = Counter(
            "sluice_proxy_requests", "HTTP requests answered.", ["route", "status"], registry=r
        )
        self._latency = _seconds("sluice_proxy_request_seconds", "Time to the full response.", ["route"], r)
        self.ttft = _seconds(
            "sluice_proxy_time_to_first_token_seconds", "Streaming: arrival to first content chunk.", [], r
        )
        self.upstream_errors = Counter(
            "sluice_proxy_upstream_errors",
            "Backend calls that failed or answered an error.",
            ["backend", "kind"],
            registry=r,
        )
        self.errors = Counter(
            "sluice_proxy_errors", "Errors answered to agents, by type.", ["type"], registry=r
        )
        self.events = Counter("sluice_proxy_events", "Events handed to the publisher.", ["kind"], registry=r)
        self.publish_lag = _seconds(
            "sluice_proxy_publish_lag_seconds",
            "Event handed to the publisher -> broker acknowledged it.",
            [],
            r,
        )
        self.unknown_fields = Counter(
            "sluice_proxy_unknown_fields",
            "Request fields passed through without being understood.",
            ["surface"],
            registry=r,
        )
        self._children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def observe_request(self, route: str, status: int, seconds: float) -> None:
        key = (route, str(status))
        pair = self._children.get(key)
        if pair is None:
            pair = (self._requests.labels(route, str(status)), self._latency.labels(route))
            self._children[key] = pair
        pair[0].inc()
        pair[1].observe(seconds)

    def bind_publisher(self, stats: Callable[[], PublisherStats]) -> None:
        for name, doc, read in _PUBLISHER_GAUGES:
            Gauge(name, doc, registry=self.registry).set_function(lambda read=read: read(stats()))

    def render(self) -> bytes:
        return generate_latest(self.registry)
