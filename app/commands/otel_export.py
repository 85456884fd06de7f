"""``sluice otel-export``: send every audited trajectory to an OTLP receiver as GenAI spans.

    sluice otel-export --config infra/sluice.yaml     # uses the otel: section (endpoint, headers, content)

Runs in the foreground; SIGTERM or Ctrl-C stops it after the batch in hand (committed only once sent).
`sluice up` runs it when ``otel.enabled`` is true.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from app.options import config_option, load_or_exit


@click.command("otel-export")
@config_option
def otel_export_command(config_path: Path | None) -> None:
    """Export trajectories as OpenTelemetry GenAI spans.

    Audited trajectories go out over OTLP/HTTP."""
    from pipeline.otel_export.exporter import run_export

    cfg = load_or_exit(config_path)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        run_export(cfg.otel, cfg.broker, cfg.topics, stop)
    except KeyboardInterrupt:
        stop.set()
