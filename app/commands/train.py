"""The trainer's commands: `sluice train run`, its policy-server operations, and `sluice serve-model`.

sluice train run --config infra/sluice.yaml [--resume] [--max-steps N]
sluice train rollback VERSION      # every policy server serves that kept weights version
sluice train push FILE VERSION     # every policy server serves these weights (safetensors) as VERSION
sluice serve-model --config infra/sluice.yaml [--checkpoint DIR] [--port P]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from app.options import config_option, load_or_exit

COMMANDLINE = ParameterSource.COMMANDLINE

if TYPE_CHECKING:
    from sluice.policy_client import FleetResult


def _run(config_path: Path | None, resume: bool, max_steps: int | None) -> None:
    from trainers.runner import run_training

    cfg = load_or_exit(config_path)  # a bad config fails here, before Ray starts
    summary = run_training(cfg.trainer_settings(), resume=resume, max_steps=max_steps)
    click.echo(summary.model_dump_json())


_resume_option = click.option(
    "--resume", is_flag=True, help="Continue from the newest checkpoint under trainer.output_dir."
)
_max_steps_option = click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Stop after N learner steps of this run (the step count continues across --resume).",
)


@click.group("train", invoke_without_command=True)
@config_option
@_resume_option
@_max_steps_option
@click.pass_context
def train_command(ctx: click.Context, config_path: Path | None, resume: bool, max_steps: int | None) -> None:
    """Train on the train topic; push or roll back weights."""
    if ctx.invoked_subcommand is not None:
        return
    given = [p for p in ("config_path", "resume", "max_steps") if ctx.get_parameter_source(p) == COMMANDLINE]
    if not given:
        click.echo(ctx.get_help())
        return
    # the older spelling `sluice train --config F` still trains
    click.echo("note: `sluice train --config F` is now `sluice train run --config F`", err=True)
    _run(config_path, resume, max_steps)


for _param in train_command.params:  # the group's options serve the older spelling only
    _param.hidden = True


@train_command.command("run")
@config_option
@_resume_option
@_max_steps_option
def run_command(config_path: Path | None, resume: bool, max_steps: int | None) -> None:
    """Run async GRPO on Ray over the train topic.

    Local Ray unless trainer.ray_address is set."""
    _run(config_path, resume, max_steps)


def _fleet_report(result: FleetResult, verb: str) -> None:
    """Print what each server answered; exit 1 if any failed."""
    for url, reply in result.replies.items():
        click.echo(
            f"{url}: serving {reply.serving_version} (swap {reply.swap_ms:.1f} ms, kept {reply.versions})"
        )
    for url, err in result.errors.items():
        click.echo(f"{url}: {verb} failed: {err.message}", err=True)
    if result.errors:
        raise SystemExit(1)


@train_command.command("rollback")
@click.argument("version")
@config_option
def rollback_command(version: str, config_path: Path | None) -> None:
    """Serve earlier weights VERSION on every policy server.

    Weights, not overlays (those roll back with `sluice evolve rollback-overlay`). Every policy server
    (trainer.policy_servers) must keep VERSION: each is asked first whether it does; if one does not
    (or is down), none is changed. Every server is asked first whether it keeps VERSION; if one does not (or is down), none is changed.
    Each server records the rollback as a policy event. A running live trainer pushes its next version as
    usual: stop it first to stay on VERSION.
    """
    from sluice.policy_client import PolicyClientError, PolicyFleet

    cfg = load_or_exit(config_path)
    fleet = PolicyFleet(cfg.trainer.policy_server_urls())
    missing = []
    for url, got in fleet.status().items():
        if isinstance(got, PolicyClientError):
            missing.append(f"{url}: {got.message}")
        elif version not in got.versions:
            missing.append(f"{url}: does not keep {version!r} (kept: {', '.join(got.versions)})")
    if missing:
        click.echo("rollback refused, no server changed:\n  " + "\n  ".join(missing), err=True)
        raise SystemExit(1)
    _fleet_report(fleet.rollback(version), "rollback")


@train_command.command("push")
@click.argument("weights", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("version")
@config_option
def push_command(weights: Path, version: str, config_path: Path | None) -> None:
    """Serve WEIGHTS as VERSION on every policy server.

    WEIGHTS is a safetensors file with state-dict names. A subset of the tensors replaces just those on top of what each server serves."""
    from sluice.policy_client import PolicyFleet

    cfg = load_or_exit(config_path)
    fleet = PolicyFleet(cfg.trainer.policy_server_urls())
    _fleet_report(fleet.push_bytes(weights.read_bytes(), version), "push")  # servers may be remote


@click.command("serve-model")
@config_option
@click.option("--checkpoint", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="HF checkpoint dir (default: newest trainer checkpoint, else the seeded tiny model).")  # fmt: skip
@click.option(
    "--port", type=click.IntRange(0, 65535), default=None, help="Default: trainer.serve.port (8788)."
)
@click.option(
    "--threads", type=click.IntRange(min=1), default=1, show_default=True, help="torch CPU threads."
)
def serve_model_command(
    config_path: Path | None, checkpoint: Path | None, port: int | None, threads: int
) -> None:
    """Serve the CPU model over an OpenAI-compatible API.

    Listens on 127.0.0.1."""
    from trainers.serving.server import serve

    cfg = load_or_exit(config_path)
    serve(cfg.trainer_settings(), checkpoint=checkpoint, port=port, threads=threads)
