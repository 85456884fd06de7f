"""``sluice proxy``: the OpenAI/Anthropic-compatible proxy that records every call as a step event.

sluice proxy --config infra/sluice.yaml [--host 0.0.0.0] [--port 8787]
"""

from __future__ import annotations

from pathlib import Path

import click

from app.options import config_option, listen_options, load_or_exit


@click.command("proxy")
@config_option
@listen_options("proxy")
def proxy_command(config_path: Path | None, host: str | None, port: int | None) -> None:
    """Serve the proxy agents call like OpenAI/Anthropic.

    Every call is published as a step event."""
    from pipeline.proxy.server import run_proxy

    cfg = load_or_exit(config_path)
    overrides = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    if overrides:
        cfg = cfg.model_copy(update={"proxy": cfg.proxy.model_copy(update=overrides)})
    run_proxy(cfg.proxy_settings())
