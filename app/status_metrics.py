"""What ``sluice status`` reads from the services' Prometheus ``/metrics``: plain figures, not samples.

Prometheus text carries, per counter, a ``_total`` sample and a ``_created`` timestamp, and every sample
as a float. Here a metric is one figure per name (labels folded, ``_created`` dropped), an integer
where it counts something, and the figures of one label (``kind``, ``type``, ``table``...) kept apart
where the breakdown says more than the sum.

    parse_metrics(urlopen("http://127.0.0.1:8080/metrics").read().decode())
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Figures = dict[str, int | float]

# Suffixes of samples that are not figures of their own.
_SKIPPED_SUFFIXES = ("_created", "_bucket")


def figure(value: float) -> int | float:
    """An integer when the value is whole (counts, depths), else the value rounded for reading."""
    return int(value) if float(value).is_integer() else round(value, 3)


def parse_metrics(text: str, prefix: str = "sluice_") -> Figures:
    """One figure per sample name starting with ``prefix`` (labels summed; no ``_created``/buckets)."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name
            if not name.startswith(prefix) or name.endswith(_SKIPPED_SUFFIXES):
                continue
            out[name] = out.get(name, 0.0) + sample.value
    return {k: figure(v) for k, v in out.items()}


def by_label(text: str, metric: str, label: str) -> Figures:
    """The samples of ``metric`` summed per value of ``label`` (e.g. events by ``kind``)."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == metric and label in sample.labels:
                key = sample.labels[label]
                out[key] = out.get(key, 0.0) + sample.value
    return {k: figure(v) for k, v in sorted(out.items())}


def fetch(url: str, timeout_s: float = 1.5) -> str | None:
    """The text at ``url``, or None when nothing answers there."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.read().decode()
    except OSError:
        return None


def scrape(url: str) -> Figures | str:
    """The figures a ``/metrics`` URL serves, or ``"down"``."""
    text = fetch(url)
    if text is None:
        return "down"
    try:
        return parse_metrics(text)
    except ValueError:
        return "down (unreadable /metrics)"
