"""Ops: ``/healthz`` and ``/metrics``, and the proxy's Prometheus metrics."""
