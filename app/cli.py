"""The ``sluice`` command. Each subcommand (``app.commands``) loads the config and hands each component
only its own sections; it is imported only when used. ``-h`` and ``--help`` work on every command.

sluice --version
sluice -h
sluice train -h
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path

import click

from app.extras import missing_extra_hint
from app.lazy_group import LazyGroup
from app.options import config_option, load_or_exit
from sluice.errors import SluiceError

# command name -> "module:attribute" of a click command, loaded on first use (keeps `sluice --help` fast).
LAZY_COMMANDS: dict[str, str] = {
    "proxy": "app.commands.proxy:proxy_command",
    "stages": "app.commands.stages:stages_command",
    "sink": "app.commands.sink:sink_command",
    "query": "app.commands.sink:query_command",
    "export": "app.commands.sink:export_command",
    "erase": "app.commands.sink:erase_command",
    "train": "app.commands.train:train_command",
    "serve-model": "app.commands.train:serve_model_command",
    "up": "app.up:up_command",
    "demo": "app.commands.demo:demo_command",
    "status": "app.status:status_command",
    "otel-export": "app.commands.otel_export:otel_export_command",
    "ui": "app.commands.ui:ui_command",
    "evolve": "app.commands.evolve:evolve_group",
}


# Inherited by every subcommand's context: `-h` works wherever `--help` does.
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="sluice-rl", prog_name="sluice", message="%(prog)s %(version)s")
@click.option(
    "--log-level",
    default="INFO",
    envvar="SLUICE_LOG_LEVEL",
    show_default=True,
    help="Log level of every service this command runs (DEBUG, INFO, WARNING, ERROR).",
)
def cli(log_level: str) -> None:
    """Sluice: governed training data from agent traffic.

    A proxy records live LLM-agent traffic; stages redact and govern it; a sink stores it in DuckDB; a
    trainer learns from it. `sluice up` starts it all; `sluice COMMAND -h` explains each command."""
    setup_logging(log_level)


@cli.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of every event on every topic."""
    from sluice.events import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


@cli.group("config")
def config_group() -> None:
    """Validate the config, or print the one in effect."""


@config_group.command("check")
@config_option
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
def config_check(config_path: Path | None, path: Path | None) -> None:
    """Validate the config; list every bad field (exit 2).

    The file is --config (or SLUICE_CONFIG); a PATH argument is taken too."""
    path = path or config_path  # the older spelling `config check PATH` still works
    cfg = load_or_exit(path)
    name = path if path is not None else "embedded default config"
    click.echo(f"{name}: ok ({len(cfg.proxy.backends)} backends, {len(cfg.proxy.api_keys)} api keys)")


@config_group.command("show")
@config_option
def config_show(config_path: Path | None) -> None:
    """Print the config in effect (secrets masked)."""
    cfg = load_or_exit(config_path)
    click.echo(cfg.model_dump_json(indent=2))


@cli.command("broker")
@click.option("--port", type=int, default=None, help="Default: the port of broker.bootstrap_servers.")
@config_option
def broker_command(port: int | None, config_path: Path | None) -> None:
    """Run the local Kafka-protocol broker (Tansu).

    Listens on 127.0.0.1 in the foreground."""
    from infra.broker import LocalBroker

    cfg = load_or_exit(config_path)
    broker = LocalBroker(port or cfg.broker.port).start()
    click.echo(f"tansu broker ready on {broker.bootstrap_servers} (memory storage); Ctrl-C stops it")

    def on_sigterm(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)  # `sluice up` stops services with SIGTERM
    try:
        broker.wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()


@cli.group("topics")
def topics_group() -> None:
    """Create and list the configured topics."""


@topics_group.command("create")
@config_option
def topics_create(config_path: Path | None) -> None:
    """Create the configured topics; existing ones are left alone."""
    from pipeline.topics import create_topics

    cfg = load_or_exit(config_path)
    for name, state in create_topics(cfg.broker, cfg.topics).items():
        click.echo(f"{state:8} {name}")


@topics_group.command("list")
@config_option
def topics_list(config_path: Path | None) -> None:
    """List topics on the broker with their partition counts."""
    from pipeline.topics import existing_topics

    cfg = load_or_exit(config_path)
    for name, parts in sorted(existing_topics(cfg.broker).items()):
        click.echo(f"{name}\t{parts}")


def main() -> None:
    try:
        cli(standalone_mode=True)
    except SluiceError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
    except ModuleNotFoundError as err:
        hint = missing_extra_hint(err)
        if hint is None:
            raise
        click.echo(f"error: {hint}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
