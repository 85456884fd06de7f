"""Operational endpoints: ``/healthz`` and ``/metrics``."""
