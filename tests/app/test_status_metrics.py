"""What ``sluice status`` makes of real ``/metrics`` text: one integer per counted thing, no
``_created`` timestamps, and a breakdown by label where asked."""

from __future__ import annotations

from app.status_metrics import by_label, parse_metrics
from pipeline.proxy.ops.metrics import ProxyMetrics


def test_proxy_metrics_become_plain_integers() -> None:
    metrics = ProxyMetrics()
    for kind in ("step", "step", "reward"):
        metrics.events.labels(kind).inc()
    metrics.errors.labels("invalid_request_error").inc()
    text = metrics.render().decode()
    assert "_created" in text  # what Prometheus text carries, and status must not show

    figures = parse_metrics(text)
    assert not [name for name in figures if name.endswith("_created")]
    assert figures["sluice_proxy_events_total"] == 3 and isinstance(figures["sluice_proxy_events_total"], int)
    assert figures["sluice_proxy_errors_total"] == 1
    assert by_label(text, "sluice_proxy_events_total", "kind") == {"reward": 1, "step": 2}
