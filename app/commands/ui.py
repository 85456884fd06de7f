"""``sluice ui``: the web console on this machine.

    sluice ui --config infra/sluice.yaml            # http://127.0.0.1:8791 (ui.host / ui.port)
    sluice ui --port 0                              # any free port (the ready line says which)

Reads the store through the sink's query endpoint when the sink runs (else the DuckDB file, read-only)
and the pipeline's state the way ``sluice status`` does; trajectories not landed yet come from the proxy
(``GET /v1/trajectories?state=pending``). Sign in with an API key: a tenant's key shows
that tenant's trajectories only.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click
from aiohttp import web

from app.options import config_option, listen_options, load_or_exit

if TYPE_CHECKING:
    from app.status import Status


@click.command("ui")
@config_option
@listen_options("ui")
def ui_command(config_path: Path | None, host: str | None, port: int | None) -> None:
    """Serve the web console.

    Trajectories (landed and pending), redactions, versions, live status, the learning curve."""
    from pipeline.console.app import make_app

    cfg = load_or_exit(config_path)

    def status(interval_s: float) -> Status:
        from app.status import collect

        return collect(cfg, interval_s)

    host = host or cfg.ui.host
    port = cfg.ui.port if port is None else port
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))

    async def serve() -> None:
        proxy_host = "127.0.0.1" if cfg.proxy.host in ("0.0.0.0", "::", "") else cfg.proxy.host
        app = make_app(cfg.ui, cfg.sink_settings(), status, f"http://{proxy_host}:{cfg.proxy.port}")
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        click.echo(f"sluice ui ready on http://{host}:{sock.getsockname()[1]}", err=False)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
