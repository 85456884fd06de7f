"""Commands of the trainer package: `sluice train` and `sluice serve-model`.

sluice train --config infra/sluice.yaml [--resume] [--max-steps N]
sluice serve-model --config infra/sluice.yaml [--checkpoint DIR] [--port P]
"""

from __future__ import annotations

from pathlib import Path

import click

from sluice.cli import config_option, load_or_exit


@click.command("train")
@config_option
@click.option("--resume", is_flag=True, help="Continue from the newest checkpoint under trainer.output_dir.")
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Stop after N learner steps of this run (the step count continues across --resume).",
)
def train_command(config_path: Path | None, resume: bool, max_steps: int | None) -> None:
    """Async GRPO on Ray over the training topic (local Ray unless trainer.ray_address is set)."""
    from trainers.runner import run_training

    cfg = load_or_exit(config_path)  # a bad config fails here, before Ray starts
    summary = run_training(cfg, resume=resume, max_steps=max_steps)
    click.echo(summary.model_dump_json())


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
    """Serve the CPU model as an OpenAI-compatible HTTP server on 127.0.0.1."""
    from trainers.serving.server import serve

    cfg = load_or_exit(config_path)
    serve(cfg, checkpoint=checkpoint, port=port, threads=threads)
