"""The ``--config`` option every command shares, and loading the config it names (exit 2 when it is bad)."""

from __future__ import annotations

import sys
from pathlib import Path

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


def load_or_exit(path: Path | None) -> SluiceConfig:
    """Load the config or print every problem and exit 2."""
    try:
        return load_config(path)
    except ConfigError as err:
        click.echo(str(err), err=True)
        sys.exit(2)
