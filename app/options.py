"""The options commands share (``--config``; ``--host``/``--port`` of a server), and loading the config
``--config`` names (exit 2 when it is bad)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from app.config import SluiceConfig, load_config
from sluice.errors import ConfigError

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    envvar="SLUICE_CONFIG",
    help="YAML config (default: the embedded infra/sluice.yaml).",
)

F = TypeVar("F", bound=Callable[..., object])


def listen_options(section: str) -> Callable[[F], F]:
    """``--host`` and ``--port`` of a server whose defaults are ``<section>.host`` / ``<section>.port``."""

    def decorate(command: F) -> F:
        command = click.option(
            "--port", type=int, default=None, help=f"Default: {section}.port (0 = any free port)."
        )(command)
        return click.option("--host", default=None, help=f"Listen address (default: {section}.host).")(
            command
        )

    return decorate


def load_or_exit(path: Path | None) -> SluiceConfig:
    """Load the config or print every problem and exit 2."""
    try:
        return load_config(path)
    except ConfigError as err:
        click.echo(str(err), err=True)
        sys.exit(2)
