"""Counters of the sink in Prometheus text form (served at ``/metrics`` of the query endpoint).

curl -s http://127.0.0.1:8790/metrics
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class SinkMetrics:
    """One registry per sink (tests run several in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.records = Counter("sluice_sink_records", "Records consumed, by kind.", ["kind"], registry=r)
        self.rows = Counter(
            "sluice_sink_rows_written", "Rows inserted or updated, by table.", ["table"], registry=r
        )
        self.batches = Counter("sluice_sink_batches", "Batches committed to DuckDB.", registry=r)
        self.batch_seconds = Histogram(
            "sluice_sink_batch_seconds",
            "Time to write and commit one batch.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.dead_letters = Counter(
            "sluice_sink_dead_letters", "Dead-letter rows written (from stages and the sink).", registry=r
        )
        self.lag = Gauge(
            "sluice_sink_lag", "Records on the broker not yet in DuckDB.", ["topic", "partition"], registry=r
        )
        self.lag_total = Gauge("sluice_sink_lag_total", "Sum of the lag over all partitions.", registry=r)
        self.queries = Counter("sluice_sink_queries", "Queries served, by outcome.", ["outcome"], registry=r)
        self.erasures = Counter("sluice_sink_erasures", "Erasure requests completed.", registry=r)
        self.ready = Gauge("sluice_sink_ready", "1 once the sink consumes and serves queries.", registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def value(self, name: str, **labels: str) -> float:
        """Current value of a sample (tests and progress logs)."""
        v = self.registry.get_sample_value(name, labels or None)
        return 0.0 if v is None else v
